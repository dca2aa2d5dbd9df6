"""Citation numbers in a model's answer: found, checked against the sources, never inside a formula."""

from __future__ import annotations

import re

from backend.answering.truncation import MATH

_CITATION = re.compile(r"\[(\d{1,3}(?:\s*[,，、\-–]\s*\d{1,3})*)\](?!\()|【(\d{1,3})】")


def _outside_math(text: str) -> list[tuple[bool, str]]:
    """The text cut into (is_math, piece) so that citation handling never touches a formula."""
    pieces: list[tuple[bool, str]] = []
    position = 0
    for match in MATH.finditer(text):
        if match.start() > position:
            pieces.append((False, text[position : match.start()]))
        pieces.append((True, match.group(0)))
        position = match.end()
    if position < len(text):
        pieces.append((False, text[position:]))
    return pieces


def _citation_numbers(match: re.Match[str]) -> list[int]:
    if match.group(2):
        return [int(match.group(2))]
    numbers: list[int] = []
    for part in re.split(r"\s*[,，、]\s*", match.group(1)):
        bounds = re.split(r"\s*[\-–]\s*", part)
        if len(bounds) == 2 and int(bounds[0]) <= int(bounds[1]) and int(bounds[1]) - int(bounds[0]) < 50:
            numbers.extend(range(int(bounds[0]), int(bounds[1]) + 1))
        else:
            numbers.extend(int(b) for b in bounds)
    return numbers


def extract_citations(text: str) -> list[int]:
    """Cited source numbers in order of first appearance: [1], [1, 2], [1-3], 【1】; formulas are ignored."""
    seen: list[int] = []
    for is_math, piece in _outside_math(text):
        if is_math:
            continue
        for match in _CITATION.finditer(piece):
            for number in _citation_numbers(match):
                if number not in seen:
                    seen.append(number)
    return seen


def validate_citations(text: str, source_count: int) -> tuple[str, list[int]]:
    """Remove citation numbers outside 1..source_count; returns the cleaned text and the removed numbers."""
    removed: list[int] = []

    def fix(match: re.Match[str]) -> str:
        numbers = _citation_numbers(match)
        valid = [n for n in numbers if 1 <= n <= source_count]
        removed.extend(n for n in numbers if n not in valid and n not in removed)
        if len(valid) == len(numbers):
            return match.group(0)
        return f"[{', '.join(str(n) for n in dict.fromkeys(valid))}]" if valid else ""

    pieces = [piece if is_math else _CITATION.sub(fix, piece) for is_math, piece in _outside_math(text)]
    cleaned = "".join(pieces)
    if removed:
        cleaned = re.sub(r"[ \t]+([.,;:!?。，；：！？])", r"\1", cleaned)  # "text [9]." -> "text."
    return cleaned, removed
