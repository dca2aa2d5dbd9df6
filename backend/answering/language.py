"""Which language the answer should be written in."""

from __future__ import annotations

from typing import Optional

from backend.text import question_language


def language_instruction(question: str, language: Optional[str] = None) -> str:
    code = language or question_language(question)
    if code == "zh":
        return "Answer in Chinese (简体中文), the language of the question."
    if code == "en":
        return "Answer in the same language as the question (English if unsure)."
    return f"Answer in {code}."
