"""The one place for language facts about text (grows into the single text module of issue 14)."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_CHAR = re.compile(f"[{CJK}]")
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9\-]*")


def text_language(text: str) -> str:
    """"zh" when Chinese characters are at least as many as Latin words, "en" when there are Latin words
    only or mostly, "" when the text has neither (numbers, formulas, empty)."""
    cjk = len(_CJK_CHAR.findall(text))
    words = len(_LATIN_WORD.findall(text))
    if cjk and cjk >= words:
        return "zh"
    return "en" if words else ""


# -- math: LaTeX and Unicode math to one plain form, for keyword matching ----------------------------------

_GREEK = dict(zip(
    "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi omicron pi "
    "varpi rho varrho sigma varsigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma "
    "Upsilon Phi Psi Omega".split(),
    "αβγδεεζηθθικλμνξοππρρσςτυφφχψωΓΔΘΛΞΠΣΥΦΨΩ"))
_SYMBOLS = {
    "leq": "≤", "le": "≤", "leqslant": "≤", "geq": "≥", "ge": "≥", "geqslant": "≥", "neq": "≠", "ne": "≠",
    "approx": "≈", "equiv": "≡", "sim": "~", "simeq": "≃", "propto": "∝", "pm": "±", "mp": "∓", "times": "×",
    "cdot": "·", "ast": "*", "star": "*", "circ": "∘", "otimes": "⊗", "oplus": "⊕", "in": "∈", "notin": "∉",
    "ni": "∋", "subset": "⊂", "subseteq": "⊆", "supset": "⊃", "supseteq": "⊇", "cup": "∪", "cap": "∩",
    "setminus": "\\", "emptyset": "∅", "varnothing": "∅", "forall": "∀", "exists": "∃", "neg": "¬",
    "wedge": "∧", "land": "∧", "vee": "∨", "lor": "∨", "to": "→", "rightarrow": "→", "longrightarrow": "→",
    "mapsto": "↦", "leftarrow": "←", "Rightarrow": "⇒", "implies": "⇒", "Leftrightarrow": "⇔", "iff": "⇔",
    "infty": "∞", "partial": "∂", "nabla": "∇", "sum": "∑", "prod": "∏", "int": "∫", "oint": "∮",
    "sqrt": "√", "ell": "l", "hbar": "ℏ", "prime": "'", "cdots": "…", "ldots": "…", "dots": "…",
    "vdots": "…", "ddots": "…", "mid": "|", "vert": "|", "Vert": "‖", "langle": "⟨", "rangle": "⟩",
    "lbrace": "{", "rbrace": "}", "perp": "⊥", "parallel": "∥", "angle": "∠", "deg": "°",
}
# Commands that only style their argument, or size a delimiter, or space: the argument (or nothing) remains.
_STYLE = frozenset("tilde widetilde hat widehat bar overline underline vec dot ddot check breve acute grave "
                   "mathcal mathbb mathbf mathrm mathit mathsf mathtt mathfrak mathscr boldsymbol bm text "
                   "textrm textit textbf textsf texttt mbox operatorname operatorname* displaystyle textstyle "
                   "scriptstyle left right big Big bigg Bigg bigl bigr Bigl Bigr biggl biggr Biggl Biggr middle "
                   "limits nolimits quad qquad".split())
_FRACTIONS = frozenset({"frac", "dfrac", "tfrac", "cfrac"})
_LATEX_COMMAND = re.compile(r"\\([A-Za-z]+\*?|.)")
# Characters PDFs and Unicode give for the same thing: one of each pair.
_UNICODE_MATH = str.maketrans({"∆": "Δ", "−": "-", "–": "-", "∗": "*", "′": "'", "″": "''", "⋅": "·",
                               "∙": "·", "˜": "", "ˆ": "", "¯": "", "ˇ": "", "˙": "", "ℓ": "l", "ϵ": "ε",
                               "ϑ": "θ", "ϕ": "φ", "ϱ": "ρ", "ϖ": "π", "⩽": "≤", "⩾": "≥", "…": "…"})
_MATH_CHAR = re.compile(r"[α-ωΑ-Ω∑∏∫∂∇∞≤≥≠≈∈⊂⊆∪∩→↦×·⊗⊕√∀∃]")
_MAX_FOLD_CHARS = 20_000


def _braced(text: str, start: int) -> tuple[str, int]:
    """The argument of a LaTeX command at ``start``: a {…} group (nested) or one character; (argument, end)."""
    while start < len(text) and text[start] == " ":
        start += 1
    if start >= len(text):
        return "", start
    if text[start] != "{":
        if text[start] == "\\":
            match = _LATEX_COMMAND.match(text, start)
            return match.group(), match.end()
        return text[start], start + 1
    depth = 0
    for index in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[index], 0)
        if depth == 0:
            return text[start + 1:index], index + 1
    return text[start + 1:], len(text)


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
