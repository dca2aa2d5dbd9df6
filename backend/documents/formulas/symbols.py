"""One table between the symbols a page shows and their LaTeX commands (both ways: the recogniser
writes LaTeX from a page's chars, the formula benchmark draws chars from LaTeX)."""

from __future__ import annotations

import re
import unicodedata

_GREEK = (
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho "
    "varsigma sigma tau upsilon phi chi psi omega"
).split()
_CAPITALS = {"gamma", "delta", "theta", "lambda", "xi", "pi", "sigma", "upsilon", "phi", "psi", "omega"}
LATEX_OF: dict[str, str] = {chr(0x3B1 + i): "\\" + name for i, name in enumerate(_GREEK) if name != "omicron"}
LATEX_OF.update({chr(0x391 + i): "\\" + name.capitalize() for i, name in enumerate(_GREEK) if name in _CAPITALS})
LATEX_OF.update(
    {
        "ϵ": "\\epsilon",
        "ε": "\\varepsilon",
        "ϕ": "\\phi",
        "ϑ": "\\vartheta",
        "ħ": "\\hbar",
        "ℏ": "\\hbar",
        "ℓ": "\\ell",
        "∂": "\\partial",
        "∇": "\\nabla",
        "∞": "\\infty",
        "∑": "\\sum",
        "∏": "\\prod",
        "∫": "\\int",
        "∮": "\\oint",
        "±": "\\pm",
        "∓": "\\mp",
        "×": "\\times",
        "÷": "\\div",
        "·": "\\cdot",
        "⋅": "\\cdot",
        "∗": "*",
        "−": "-",
        "–": "-",
        "≤": "\\leq",
        "≥": "\\geq",
        "≠": "\\neq",
        "≈": "\\approx",
        "≡": "\\equiv",
        "∼": "\\sim",
        "∝": "\\propto",
        "→": "\\to",
        "←": "\\leftarrow",
        "⇒": "\\Rightarrow",
        "⇔": "\\Leftrightarrow",
        "∈": "\\in",
        "∉": "\\notin",
        "⊂": "\\subset",
        "⊆": "\\subseteq",
        "∪": "\\cup",
        "∩": "\\cap",
        "∀": "\\forall",
        "∃": "\\exists",
        "…": "\\ldots",
        "⋯": "\\cdots",
        "′": "'",
        "√": "\\sqrt",
        "²": "^{2}",
        "³": "^{3}",
        "‖": "\\|",
    }
)
CHAR_OF: dict[str, str] = {latex: ch for ch, latex in reversed(list(LATEX_OF.items()))}
# accents drawn as a glyph of their own above a letter (TeX), or combined with it (Unicode)
ACCENT_OF = {"ˆ": "\\hat", "^": "\\hat", "˜": "\\tilde", "~": "\\tilde", "¯": "\\bar", "˙": "\\dot", "→": "\\vec"}
_COMBINING = {"\u0302": "\\hat", "\u0303": "\\tilde", "\u0304": "\\bar", "\u0307": "\\dot", "\u20d7": "\\vec"}
_COMMAND_END = re.compile(r"\\[A-Za-z]+$")
FUNCTIONS = {"sin", "cos", "tan", "log", "ln", "exp", "max", "min", "lim", "det", "sinh", "cosh", "tanh"}


def latex_symbol(ch: str) -> str:
    """One char as LaTeX: a command for a known symbol, a hat over a letter for a precomposed Ĥ, else the
    char itself."""
    if ch in LATEX_OF:
        return LATEX_OF[ch]
    decomposed = unicodedata.normalize("NFD", ch)
    if len(decomposed) == 2 and decomposed[1] in _COMBINING:
        return f"{_COMBINING[decomposed[1]]}{{{latex_symbol(decomposed[0])}}}"
    return ch


def needs_space_after(latex: str) -> bool:
    """Ends in a command made of letters, which would run into a following letter ("\\pi x", not "\\pix")."""
    return bool(_COMMAND_END.search(latex))
