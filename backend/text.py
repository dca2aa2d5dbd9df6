"""The one place for language facts about text (grows into the single text module of issue 14)."""

from __future__ import annotations

import re

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
