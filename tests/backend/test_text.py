"""backend/text.py: the language of a text, terms, joining, math folding."""

import subprocess
import sys
from pathlib import Path

from backend.answering.language import language_instruction
from backend.answering.prompts import translation_prompt
from backend.text import CJK_CHAR, HAN_CHAR, join_words, query_terms, question_language, text_language


def test_text_language():
    assert text_language("能量守恒定律是物理学的基本定律之一。") == "zh"
    assert text_language("中文论文里引用 BERT 和 GPT 模型的名字") == "zh"
    assert text_language("Energy conservation is a basic law of physics.") == "en"
    assert text_language("An English sentence that names 北京 once.") == "en"
    assert text_language("E = mc^2  (1.1)") == "en"
    assert text_language("123 456 = 7") == ""
    assert text_language("") == ""


def test_fold_math_gives_latex_and_unicode_math_one_form():
    from backend.text import fold_math

    assert fold_math(r"$\frac{d^{2}\sigma}{d\rho d\Lambda}$") == "d2σ/dρ dΛ"
    assert fold_math(r"$d(\tilde{\theta}_{n},\;\Theta^{\prime})$") == fold_math("d(θ̃n, Θ′)") == "d(θn, Θ')"
    assert fold_math(r"$\Delta\widetilde{\mathcal{M}}^{(n)}$") == fold_math("∆M̃(n)") == "ΔM(n)"
    assert fold_math(r"$Q(G,C_{1}) \leq Q(G,C_{2})$") == fold_math("Q(G,C₁) ⩽ Q(G,C₂)") == "Q(G,C1) ≤ Q(G,C2)"
    assert fold_math(r"\operatorname*{lim}_{n\to\infty} x_n") == "limn→∞ xn"
    assert fold_math("𝜎² and σ2") == "σ2 and σ2"  # math italic and superscripts (NFKC)
    assert fold_math(r"\alpha\beta \unknownmacro{x}") == "αβ unknownmacrox"
    assert fold_math("Ledoit-Péché") == "Ledoit-Peche"  # accents go, on both sides
    assert fold_math("能量守恒 E = mc^2") == "能量守恒 E = mc2"


def test_math_terms_and_the_compact_form_find_formulas_whatever_their_spacing():
    from backend.text import compact_math, fold_math, math_terms

    assert math_terms(fold_math(r"$\frac{d^{2}\sigma}{d\rho d\Lambda}$")) == ["d2σ", "dρ", "dΛ"]
    assert math_terms("plain words only") == []
    assert "dρdΛd2σ" in compact_math("dρ dΛd2σ")
    assert compact_math("no math here") == "no math here"


def test_the_answer_and_the_translation_of_a_question_go_by_one_language():
    # Mixed questions once got a Chinese answer but a translation "into Chinese" (two language tests).
    for question in [
        "用Transformer做什么",
        "What does 机器学习 mean?",
        "BERT和GPT-4的区别",
        "什么是 attention",
        "Explain the learning rate",
        "能量守恒定律是什么？",
        "E = mc^2",
    ]:
        answered_in_chinese = "Chinese" in language_instruction(question)
        translated_into_english = "into English" in translation_prompt(question)[0]["content"]
        assert answered_in_chinese == translated_into_english == (question_language(question) == "zh"), question


def test_cjk_characters_join_without_a_space_and_han_characters_make_chinese():
    assert join_words("能量", "守恒") == "能量守恒"
    assert join_words("BERT", "模型") == "BERT模型"
    assert join_words("energy", "conservation") == "energy conservation"
    assert join_words("", "x") == "x" and join_words("x", "") == "x"
    assert join_words("かな", "カナ") == "かなカナ"  # kana and full-width punctuation are unspaced too...
    assert CJK_CHAR.match("，") and not HAN_CHAR.match("，")  # ...but only Han characters make a text Chinese
    assert question_language("，，，") == "en"


def test_query_terms_cut_chinese_in_words_for_the_index_and_in_pairs_for_passages():
    assert query_terms("注意力机制如何计算？") == ("注意力", "机制", "计算")
    pairs = query_terms("注意力机制如何计算？", chinese="pairs")
    assert {"注意", "意力", "力机", "机制", "计算"} <= set(pairs) and "如何" not in pairs
    assert "explain" not in query_terms("Explain the paper", chinese="pairs", drop=frozenset({"explain", "paper"}))


def test_jieba_is_loaded_on_first_use_with_its_cache_in_the_given_folder(tmp_path):
    script = (
        f"import sys; from pathlib import Path; from backend import text; text.use_cache_dir(Path({str(tmp_path)!r}));"
        "assert 'jieba' not in sys.modules; assert text.query_terms('机器学习的方法')"
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=Path(__file__).parents[2], timeout=120)
    assert any(tmp_path.iterdir())  # jieba's dictionary cache


def test_a_fraction_that_ends_in_a_lone_backslash_is_folded_not_a_crash():
    from backend.text import fold_math

    assert fold_math("what is \\frac\\") == "what is \\/"  # a question typed half-way: search must not fail
    assert fold_math("a \\frac{x}\\") == "a x/\\"
