"""The one text module: language of a text, Chinese and English terms (jieba), stop words, CJK-aware
joining, and LaTeX/Unicode math folded to one form for keyword matching."""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Optional

# Han ideographs: what makes a text Chinese (its language, its Chinese terms).
HAN = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# Scripts written without spaces between words: Han plus radicals, CJK punctuation, kana, Yijing symbols
# and full-width forms. Lines and words of these join with no space.
CJK = r"\u2e80-\u33ff" + HAN + r"\u4dc0-\u4dff\uff00-\uffef"
HAN_CHAR = re.compile(f"[{HAN}]")
CJK_CHAR = re.compile(f"[{CJK}]")
_HAN_RUN = re.compile(f"[{HAN}]+")
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9\-]*")


def text_language(text: str) -> str:
    """ "zh" when Chinese characters are at least as many as Latin words, "en" when there are Latin words
    only or mostly, "" when the text has neither (numbers, formulas, empty)."""
    han = len(HAN_CHAR.findall(text))
    words = len(_LATIN_WORD.findall(text))
    if han and han >= words:
        return "zh"
    return "en" if words else ""


def question_language(question: str) -> str:
    """The language a question is answered in, and the one its translation is made from: "zh" or "en"."""
    return text_language(question) or "en"


# -- joining pieces of text --------------------------------------------------------------------------------


def join_words(left: str, right: str) -> str:
    """Two pieces of one line or paragraph: no space where either side is CJK, one space between words."""
    if not left:
        return right
    if not right:
        return left
    if CJK_CHAR.match(left[-1]) or CJK_CHAR.match(right[0]):
        return left + right
    return left + " " + right


# -- stop words and terms ----------------------------------------------------------------------------------

ENGLISH_STOPWORDS = frozenset(
    """
a about above after again against all am an and any are as at be because been before being below between both
but by can could did do does doing down during each few for from further had has have having he her here hers
him his how i if in into is it its itself just me more most my no nor not of off on once only or other our out
over own same she should so some such than that the their them then there these they this those through to too
under until up very was we were what when where which while who whom why will with would you your yours
called name named did does many much kind type one also used use known
""".split()
)
CHINESE_STOPWORDS = frozenset(
    """
什么 哪些 哪个 哪里 哪儿 哪 多少 几 几个 几年 谁 为什么 为何 怎么 怎样 如何 是否 是 的 了 在 有 和 与 及 或 吗 呢 吧
啊 被 把 对 于 以 而 之 其 这 那 这个 那个 这些 那些 一个 一种 什么样 哪一 哪种 哪家 哪位 多久 多长 多大 何时 何地
何人 请问 请 问 称为 叫做 叫 称 名为 属于 由 从 到 为 将 也 都 就 还 又 所 得 地 着 过 给 让 向 会 能 可以 要
""".split()
)
# Words that ask for something rather than name it: no help in finding the sentence that answers.
REQUEST_WORDS = frozenset("whose yes please tell explain describe paper document 文中 文档 论文".split())
# Two-character pieces of Chinese question words (为什么 -> 为什, 什么是 -> 么是, 是什), for terms cut in pairs.
_CHINESE_STOP_PAIRS = frozenset("为什 么是 是什 的是".split()) | {w for w in CHINESE_STOPWORDS if len(w) == 2}
_ENGLISH_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'’\-]*[A-Za-z0-9]|[A-Za-z]")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*%?")
_ACRONYM = re.compile(r"\b[A-Z][A-Z0-9&\-]{1,}\b")
_CAPITALISED = re.compile(r"\b[A-Z][a-z][A-Za-z\-]+\b")
_MAX_TERMS = 64

_jieba_lock = threading.Lock()
_jieba: Any = None
_cache_dir: Optional[Path] = None


def use_cache_dir(cache_dir: Path) -> None:
    """Where jieba keeps its dictionary cache (by default a temp folder): inside data_dir. Only recorded;
    jieba is loaded on the first Chinese question (or by ``warm_up``)."""
    global _cache_dir
    _cache_dir = cache_dir


def tokenizer() -> Any:
    """jieba, configured once: quiet logger, dictionary cache in the data folder, dictionary loaded."""
    global _jieba
    with _jieba_lock:
        if _jieba is None:
            with warnings.catch_warnings():  # jieba imports pkg_resources, which warns on every start
                warnings.simplefilter("ignore", UserWarning)
                import jieba

            jieba.setLogLevel(logging.WARNING)  # jieba sets its own logger to DEBUG on import
            if _cache_dir is not None:
                _cache_dir.mkdir(parents=True, exist_ok=True)
                jieba.dt.tmp_dir = str(_cache_dir)
            jieba.initialize()
            _jieba = jieba
    return _jieba


def warm_up() -> None:
    """Load jieba's dictionary (~4 s) now, not in the first question."""
    query_terms("预热 warm-up")


def normalize(text: str) -> str:
    """NFKC and lower case, with LaTeX and Unicode math folded to one form (fold_math)."""
    return fold_math(text).lower()


def searchable(text: str) -> str:
    """A chunk's text as the lexical signals look words up in it (formulas also without their spaces)."""
    return compact_math(normalize(text))


@lru_cache(maxsize=4096)
def query_terms(
    question: str, chinese: Literal["words", "pairs"] = "words", drop: frozenset[str] = frozenset()
) -> tuple[str, ...]:
    """Content words of a question: Chinese terms, English words of 2+ letters, numbers and formula tokens,
    without stop words (nor the words in ``drop``).

    ``chinese="words"``: jieba words of 2+ characters, as the keyword index cuts text (single characters
    match almost any chunk). ``"pairs"``: every two-character piece of a Chinese run (a single-character
    run as it is), for finding the question's words in a passage without segmenting the passage."""
    text = normalize(question)
    terms: list[str] = []
    for run in _HAN_RUN.findall(text):
        if chinese == "pairs":
            pieces = [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
            terms += [p for p in pieces if p not in _CHINESE_STOP_PAIRS and p not in drop]
        else:
            terms += [w for w in tokenizer().lcut(run) if len(w) >= 2 and w not in CHINESE_STOPWORDS and w not in drop]
    for word in _ENGLISH_WORD.findall(text):
        if word not in ENGLISH_STOPWORDS and word not in drop and len(word) >= 2:
            terms.append(word)
    terms.extend(_NUMBER.findall(text))
    terms.extend(math_terms(text))
    return tuple(dict.fromkeys(terms))[:_MAX_TERMS]


@lru_cache(maxsize=4096)
def query_entities(question: str) -> tuple[str, ...]:
    """Likely proper nouns: acronyms, capitalised words (not the first word), numbers, Chinese terms of 3+ chars
    or quoted/bracketed Chinese runs — the words that pin a passage down."""
    text = fold_math(question)
    found: list[str] = []
    found += [m.lower() for m in _ACRONYM.findall(text)]
    words = text.split()
    for m in _CAPITALISED.finditer(text):
        first_word = words and text.find(m.group()) == text.find(words[0])
        if not first_word and m.group().lower() not in ENGLISH_STOPWORDS:
            found.append(m.group().lower())
    found += _NUMBER.findall(text)
    for quoted in re.findall(r"[《“\"「『]([^》”\"」』]{2,30})[》”\"」』]", text):
        found.append(quoted.lower())
    for run in _HAN_RUN.findall(text):
        for word in tokenizer().lcut(run):
            if len(word) >= 3 and word not in CHINESE_STOPWORDS:
                found.append(word)
    return tuple(dict.fromkeys(found))


# -- math: LaTeX and Unicode math to one plain form, for keyword matching ----------------------------------

_GREEK = dict(
    zip(
        "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi omicron pi "
        "varpi rho varrho sigma varsigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma "
        "Upsilon Phi Psi Omega".split(),
        "αβγδεεζηθθικλμνξοππρρσςτυφφχψωΓΔΘΛΞΠΣΥΦΨΩ",
    )
)
_SYMBOLS = {
    "leq": "≤",
    "le": "≤",
    "leqslant": "≤",
    "geq": "≥",
    "ge": "≥",
    "geqslant": "≥",
    "neq": "≠",
    "ne": "≠",
    "approx": "≈",
    "equiv": "≡",
    "sim": "~",
    "simeq": "≃",
    "propto": "∝",
    "pm": "±",
    "mp": "∓",
    "times": "×",
    "cdot": "·",
    "ast": "*",
    "star": "*",
    "circ": "∘",
    "otimes": "⊗",
    "oplus": "⊕",
    "in": "∈",
    "notin": "∉",
    "ni": "∋",
    "subset": "⊂",
    "subseteq": "⊆",
    "supset": "⊃",
    "supseteq": "⊇",
    "cup": "∪",
    "cap": "∩",
    "setminus": "\\",
    "emptyset": "∅",
    "varnothing": "∅",
    "forall": "∀",
    "exists": "∃",
    "neg": "¬",
    "wedge": "∧",
    "land": "∧",
    "vee": "∨",
    "lor": "∨",
    "to": "→",
    "rightarrow": "→",
    "longrightarrow": "→",
    "mapsto": "↦",
    "leftarrow": "←",
    "Rightarrow": "⇒",
    "implies": "⇒",
    "Leftrightarrow": "⇔",
    "iff": "⇔",
    "infty": "∞",
    "partial": "∂",
    "nabla": "∇",
    "sum": "∑",
    "prod": "∏",
    "int": "∫",
    "oint": "∮",
    "sqrt": "√",
    "ell": "l",
    "hbar": "ℏ",
    "prime": "'",
    "cdots": "…",
    "ldots": "…",
    "dots": "…",
    "vdots": "…",
    "ddots": "…",
    "mid": "|",
    "vert": "|",
    "Vert": "‖",
    "langle": "⟨",
    "rangle": "⟩",
    "lbrace": "{",
    "rbrace": "}",
    "perp": "⊥",
    "parallel": "∥",
    "angle": "∠",
    "deg": "°",
}
# Commands that only style their argument, or size a delimiter, or space: the argument (or nothing) remains.
_STYLE = frozenset(
    "tilde widetilde hat widehat bar overline underline vec dot ddot check breve acute grave "
    "mathcal mathbb mathbf mathrm mathit mathsf mathtt mathfrak mathscr boldsymbol bm text "
    "textrm textit textbf textsf texttt mbox operatorname operatorname* displaystyle textstyle "
    "scriptstyle left right big Big bigg Bigg bigl bigr Bigl Bigr biggl biggr Biggl Biggr middle "
    "limits nolimits quad qquad".split()
)
_FRACTIONS = frozenset({"frac", "dfrac", "tfrac", "cfrac"})
_LATEX_COMMAND = re.compile(r"\\([A-Za-z]+\*?|.)")
# Characters PDFs and Unicode give for the same thing: one of each pair.
_UNICODE_MATH = str.maketrans(
    {
        "∆": "Δ",
        "−": "-",
        "–": "-",
        "∗": "*",
        "′": "'",
        "″": "''",
        "⋅": "·",
        "∙": "·",
        "˜": "",
        "ˆ": "",
        "¯": "",
        "ˇ": "",
        "˙": "",
        "ℓ": "l",
        "ϵ": "ε",
        "ϑ": "θ",
        "ϕ": "φ",
        "ϱ": "ρ",
        "ϖ": "π",
        "⩽": "≤",
        "⩾": "≥",
        "…": "…",
    }
)
_MATH_CHAR = re.compile(r"[α-ωΑ-Ω∑∏∫∂∇∞≤≥≠≈∈⊂⊆∪∩→↦×·⊗⊕√∀∃]")
_MAX_FOLD_CHARS = 20_000


def _braced(text: str, start: int) -> tuple[str, int]:
    """The argument of a LaTeX command at ``start``: a {…} group (nested) or one character; (argument, end)."""
    while start < len(text) and text[start] == " ":
        start += 1
    if start >= len(text):
        return "", start
    if text[start] != "{":
        match = _LATEX_COMMAND.match(text, start) if text[start] == "\\" else None
        if match is not None:  # a lone backslash at the end (a question typed half-way) is a plain character
            return match.group(), match.end()
        return text[start], start + 1
    depth = 0
    for index in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[index], 0)
        if depth == 0:
            return text[start + 1 : index], index + 1
    return text[start + 1 :], len(text)


def _unlatex(text: str) -> str:
    """LaTeX commands to the Unicode a PDF's text layer shows: \\sigma -> σ, \\frac{a}{b} -> a/b,
    \\tilde{x} -> x; sub/superscript marks, braces and $ go."""
    out: list[str] = []
    index = 0
    while index < len(text):
        match = _LATEX_COMMAND.match(text, index) if text[index] == "\\" else None
        if match is None:
            out.append(text[index])
            index += 1
            continue
        name, index = match.group(1), match.end()
        if name in _FRACTIONS:
            numerator, index = _braced(text, index)
            denominator, index = _braced(text, index)
            out.append(f"{_unlatex(numerator)}/{_unlatex(denominator)}")
        elif name in _GREEK or name in _SYMBOLS:
            out.append(_GREEK.get(name) or _SYMBOLS[name])
        elif name in _STYLE or not name.isalpha():
            out.append(" " if name in (",", ";", ":", " ", "quad", "qquad") else "")
        else:  # \lim, \log, \max, unknown macros: their name is what the page shows
            out.append(name.rstrip("*"))
    return "".join(out)


@lru_cache(maxsize=8192)
def fold_math(text: str) -> str:
    """One form for math written in LaTeX (questions) or in Unicode (PDF text): NFKC (𝜎 -> σ, ² -> 2),
    accents dropped (θ̃ -> θ), LaTeX commands to their symbols, ^ _ { } $ removed. Case is kept."""
    text = text[:_MAX_FOLD_CHARS]
    if "\\" in text:
        text = _unlatex(text)
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text).translate(_UNICODE_MATH))
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    text = re.sub(r"[\^_{}$]", "", text)
    return unicodedata.normalize("NFC", text)


def has_math(text: str) -> bool:
    return bool(_MATH_CHAR.search(text))


_MATH_TOKEN = re.compile(r"[\w∑∏∫∂∇∞√]+")


def math_terms(folded: str) -> list[str]:
    """Tokens of folded text that hold a Greek letter or a math symbol (``d2σ``, ``θn``, ``σ``): the words a
    formula can be found by, whatever way it was written."""
    return [token for token in _MATH_TOKEN.findall(folded) if has_math(token)]


def compact_math(folded: str) -> str:
    """Folded text, plus the same without white space when it holds math: a PDF's formula spacing is
    arbitrary ("dρ dΛd2σ"), so a formula term is looked for in both."""
    return folded + "\n" + re.sub(r"\s+", "", folded) if has_math(folded) else folded
