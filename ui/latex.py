"""LaTeX in Gradio Markdown: render all four delimiters, but keep prices like "$5 and $10" as text.

Gradio 6.31 renders math with KaTeX auto-render on the DOM after Markdown, plus a Markdown rule that
swallows any ``$…$`` span. A backslash escape (``\\$5``) does not survive both (measured: it renders as
"$5 and \\$10" or as math). What works: the money sign as an HTML entity inside its own element,
``<span>&#36;</span>5``. The raw text then has no ``$`` for the Markdown rule, and auto-render never
pairs delimiters across element boundaries.
"""

from __future__ import annotations

import html
import re

from backend.service import FORMULA_IMAGE

LATEX_DELIMITERS: list[dict[str, str | bool]] = [
    {"left": "$$", "right": "$$", "display": True},
    {"left": "\\[", "right": "\\]", "display": True},
    {"left": "\\(", "right": "\\)", "display": False},
    {"left": "$", "right": "$", "display": False},
]

CURRENCY_HTML = '<span class="dl-currency">&#36;</span>'

# Spans never touched: code, and math with unambiguous delimiters.
_PROTECTED = re.compile(
    r"```.*?(?:```|\Z)"  # fenced code (also while a stream is still inside it)
    r"|`[^`\n]*`"  # inline code
    r"|\$\$.+?\$\$"  # display math
    r"|\\\[.+?\\\]"  # \[ … \]
    r"|\\\(.+?\\\)",  # \( … \)
    re.S,
)

# "$" + an amount: 5, 10.50, 1,000, 3.5k, 2 million. Group "after" is what follows the amount.
_MONEY = re.compile(
    r"(?<![\\$])\$(?P<amount>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?P<suffix>(?:\s?(?:k|K|m|M|bn|B|million|billion|thousand|USD))?)"
    r"(?=(?P<after>\s*.?))",
    re.S,
)
_MATH_AFTER = set("=+*/^_<>\\{}|")  # an operator after the number means the "$" opens math


def protect_currency(text: str) -> str:
    """Return ``text`` with money-like ``$`` signs made literal; math and code are left as they are."""
    if "$" not in text:
        return text
    pieces: list[str] = []
    position = 0
    for match in _PROTECTED.finditer(text):
        pieces.append(_escape_money(text[position : match.start()]))
        pieces.append(match.group(0))
        position = match.end()
    pieces.append(_escape_money(text[position:]))
    return "".join(pieces)


def _escape_money(text: str) -> str:
    if "$" not in text:
        return text
    return _MONEY.sub(
        lambda m: CURRENCY_HTML + m.group("amount") + m.group("suffix") if _is_money(m) else m.group(0), text
    )


def _is_money(match: re.Match[str]) -> bool:
    """A "$" + number is money unless what follows says math: "$5$", "$2x+1$", "$3 = y$"."""
    after = match.group("after")
    following = after.strip()[:1]
    if not after:
        return True  # the end of the text
    if after[0] == "$":
        return False  # "$5$": the number 5 as math
    if after[0].isalpha() and not match.group("suffix"):
        return False  # "$2x + 1$"
    return following not in _MATH_AFTER


BACKSLASH_HTML = '<span class="dl-currency">&#92;</span>'


def literal_text(text: str) -> str:
    """The user's own words or quoted document text: never math. HTML is escaped, and every ``$`` and
    backslash sits in its own element, so neither the Markdown math rule nor KaTeX auto-render sees a
    delimiter ("$5 and $10", "(M$)", "\\(x\\)" all stay as typed)."""
    escaped = html.escape(text, quote=False)
    return escaped.replace("\\", BACKSLASH_HTML).replace("$", CURRENCY_HTML)


_MARKDOWN_PUNCTUATION = set("`*_[](){}|~")  # names sit inside a line: "." "-" "#" start nothing there


def md_literal(name: str) -> str:
    """A name (knowledge base, file) inside our Markdown: shown exactly as typed, never as emphasis, a link,
    HTML or math ("**x**", "<img src=x onerror=...>", "$5" all stay text)."""
    out = []
    for char in name:
        if char == "\\":
            out.append(BACKSLASH_HTML)
        elif char == "$":
            out.append(CURRENCY_HTML)
        elif char in "<>&\"'":
            out.append(html.escape(char))
        elif char in _MARKDOWN_PUNCTUATION:
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)


# A display formula as the parser writes it (a PP-StructureV3 formula block): "$$ <LaTeX> $$".
_PARSED_FORMULA = re.compile(r"\$\$ [^$\n]+? \$\$")


# A formula kept only as an image, as the parser marks it ("[formula image p1_eq1, OCR: …]"): FORMULA_IMAGE.
_FORMULA_IMAGE_SHOWN = {
    "en": ("[formula shown as an image; OCR reads: {ocr}]", "[formula shown as an image]"),
    "zh": ("［公式为图片；OCR 识别为：{ocr}］", "［公式为图片］"),
}


def document_text(text: str, lang: str = "en") -> str:
    """Quoted document text: literal (``literal_text``), except the display formulas the parser wrote as
    ``$$ <LaTeX> $$``, which render as math; a formula kept only as an image says so in ``lang``."""
    pieces: list[str] = []
    position = 0
    for match in _PARSED_FORMULA.finditer(text):
        pieces += [literal_text(formula_images_shown(text[position : match.start()], lang)), match.group(0)]
        position = match.end()
    pieces.append(literal_text(formula_images_shown(text[position:], lang)))
    return "".join(pieces)


def formula_images_shown(text: str, lang: str) -> str:
    """The parser's mark of a formula kept as an image, in words of ``lang`` (the page and the export)."""
    with_ocr, without = _FORMULA_IMAGE_SHOWN.get(lang, _FORMULA_IMAGE_SHOWN["en"])
    return FORMULA_IMAGE.sub(lambda m: with_ocr.format(ocr=m.group("ocr")) if m.group("ocr") else without, text)
