"""TeX's math fonts drawn without a Unicode map. pdfium then reads each glyph as the ASCII char of its code:
"kxk" for ‖x‖ (cmsy), "Θ0" for Θ′, "we(1)" for w̃(1) (cmex's wide tilde), "6=" for ≠. The Computer Modern
code tables say what each glyph shows; only glyphs pdfium reports as unmapped are read through them, so a
font that does carry a map is read as it says."""

from __future__ import annotations

import unicodedata
from typing import Optional

NEGATION = "\u0338"  # cmsy's slash drawn over a symbol: "=" then reads "≠"
_DROP = ""  # a piece of a tall delimiter or radical: the top piece stands for the whole

# cmsy: operators, relations, arrows and delimiters (its capitals are calligraphic letters: read as they are)
_CMSY = dict(
    enumerate(
        "−·×∗÷⋄±∓⊕⊖⊗⊘⊙◯∘•≍≡⊆⊇≤≥⪯⪰∼≈⊂⊃≪≫≺≻←→↑↓↔↗↘≃⇐⇒⇑⇓⇔↖↙∝′∞∈∋△▽" + NEGATION + "_∀∃¬∅ℜℑ⊤⊥"  # "_": 0x37, set below
    )
) | {
    0x37: _DROP,  # the stem of ↦
    0x40: "ℵ",
    **dict(enumerate("∪∩⊎∧∨⊢⊣⌊⌋⌈⌉{}⟨⟩|‖↕⇕∖≀√⨿∇∫⊔⊓⊑⊒§†‡¶♣♢♡♠", start=0x5B)),
}

# cmex: delimiters in four sizes, the pieces of taller ones, big operators, wide accents, radicals
_CMEX = (
    dict(enumerate("()[]⌊⌋⌈⌉{}⟨⟩|‖/\\()()[]⌊⌋⌈⌉{}⟨⟩/\\()[]⌊⌋⌈⌉{}⟨⟩/\\/\\"))
    | {0x0C: _DROP, 0x0D: _DROP}  # bars that stack into a tall one: read one over another they made "|/|/|"
    | dict.fromkeys(range(0x30, 0x44), _DROP)
    | {0x30: "(", 0x31: ")", 0x32: "[", 0x33: "]", 0x38: "{", 0x39: "}"}  # top pieces stand for the whole
    | dict(enumerate("⟨⟩⨆⨆∮∮⨀⨀⨁⨁⨂⨂∑∏∫⋃⋂⨄⋀⋁∑∏∫⋃⋂⨄⋀⋁∐∐", start=0x44))
    | {0x62: "ˆ", 0x63: "ˆ", 0x64: "ˆ", 0x65: "˜", 0x66: "˜", 0x67: "˜"}  # wide hats and tildes: accents
    | dict(enumerate("[]⌊⌋⌈⌉{}√√√√√", start=0x68))
    | dict.fromkeys(range(0x75, 0x80), _DROP)
)

# cmmi: Greek and the few symbols among its letters (its letters and digits read as they are)
_CMMI = dict(enumerate("ΓΔΘΛΞΠΣΥΦΨΩαβγδϵζηθικλμνξπρστυϕχψωεϑϖϱςφ")) | {
    0x3F: "⋆",
    0x40: "∂",
    0x60: "ℓ",
    0x7B: "ı",
    0x7C: "ȷ",
    0x7D: "℘",
}

# AMS symbols and stmaryrd: the few glyphs papers draw most (the rest read as their codes, as before); the
# end-of-proof squares read as nothing: set at the right margin they joined the next heading to the proof
_MSAM = {0x03: _DROP, 0x04: _DROP, 0x06: "◊", 0x07: "⧫", 0x5D: "∡", 0x5E: "∢"}
_STMARY = {0x4A: "⟦", 0x4B: "⟧"}

_FAMILIES = {
    "CMSY": _CMSY,
    "CMBSY": _CMSY,
    "CMEX": _CMEX,
    "CMMI": _CMMI,
    "CMMIB": _CMMI,
    "MSAM": _MSAM,
    "MSBM": {},
    "STMARY": _STMARY,
}


def shown_char(font_name: str, code: int) -> Optional[str]:
    """What an unmapped glyph of code ``code`` shows in ``font_name`` (its subset prefix removed): a char,
    ``NEGATION``, or "" for a piece or a control code that reads as nothing; None when the font is not one
    of TeX's math fonts. A code the tables leave out reads as its char."""
    table = _FAMILIES.get(_family(font_name))
    if table is None:
        return None
    return table.get(code, chr(code) if code >= 0x20 else "")


def _family(font_name: str) -> str:
    return font_name.split("+")[-1].upper().rstrip("0123456789")


# Adobe's private-use code points for the pieces of tall delimiters (pdfTeX's glyphtounicode maps cmex's
# pieces to them): a parenthesis' or bracket's top piece reads as it, its other pieces as nothing (a
# matrix's tall parentheses had read as ten U+F8EC in a row). A brace's pieces stay: tall, they hold the
# rows of a formula of cases together, and the text leaves them out (``TALL_BRACE_PIECES``).
_PIECES = dict.fromkeys([*range(0xF8E5, 0xF8F1), *range(0xF8F5, 0xF8FC)], _DROP) | {
    0xF8E8: "®",
    0xF8E9: "©",
    0xF8EA: "™",
    0xF8EB: "(",
    0xF8EE: "[",
    0xF8F6: ")",
    0xF8F9: "]",
}
TALL_BRACE_PIECES = "".join(map(chr, [*range(0xF8F1, 0xF8F5), *range(0xF8FC, 0xF8FF)]))
DELIMITER_CODES = range(0xF8E5, 0xF8FF)  # every piece above: a glyph outside it need not ask delimiter_piece


def delimiter_piece(code: int) -> Optional[str]:
    """What a glyph mapped to one of Adobe's delimiter pieces reads as ("" for nothing); None for any
    other code (a brace's pieces included)."""
    return _PIECES.get(code)


def _shown_symbols() -> str:
    """Every non-ASCII char the tables give, and the symbols the negation slash makes: what the stored text
    may hold where the PDF's own text (its search) has an ASCII letter."""
    shown = {ch for table in _FAMILIES.values() for ch in table.values() if len(ch) == 1 and ord(ch) > 0x7F}
    crossed = {unicodedata.normalize("NFC", ch + NEGATION) for ch in shown | set("=<>")}
    return "".join(sorted(shown | {ch for ch in crossed if len(ch) == 1} - {NEGATION}))


SHOWN_SYMBOLS = _shown_symbols()
