"""backend/text.py: the language of a piece of text."""

from backend.text import text_language


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
