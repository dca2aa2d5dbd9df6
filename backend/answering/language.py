"""Which language the answer should be written in."""

from __future__ import annotations

import re
from typing import Optional

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9\-]*")


def detect_language(text: str) -> str:
    """"zh" when Chinese characters are at least as many as Latin words, else "en"."""
    cjk = len(_CJK.findall(text))
    return "zh" if cjk and cjk >= len(LATIN_WORD.findall(text)) else "en"


def language_instruction(question: str, language: Optional[str] = None) -> str:
    code = language or detect_language(question)
    if code == "zh":
        return "Answer in Chinese (简体中文), the language of the question."
    if code == "en":
        return "Answer in the same language as the question (English if unsure)."
    return f"Answer in {code}."
