"""Cutting text to a length without breaking a formula: shared by prompts, excerpts and figures."""

from __future__ import annotations

import re

MATH = re.compile(r"\$\$.*?\$\$|\\\[.*?\\\]|\\\(.*?\\\)|\$[^$\n]+?\$", re.S)  # LaTeX as written


def clip(text: str, limit: int) -> str:
    """At most ``limit`` characters, ending in "…" when cut; never cuts a formula in half."""
    if limit <= 0:
        return ""
    if len(text) <= limit:
        return text
    cut = max(0, limit - 1)
    for formula in MATH.finditer(text):
        if formula.start() < cut < formula.end():
            cut = formula.start()  # a half formula would break the LaTeX rendering of the rest
            break
        if formula.start() >= cut:
            break
    return text[:cut].rstrip() + "…"


def window(text: str, start: int, end: int, radius: int) -> str:
    left, right = max(0, start - radius), min(len(text), end + radius)
    return ("…" if left else "") + text[left:right].strip() + ("…" if right < len(text) else "")
