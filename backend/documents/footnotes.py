"""Footnotes read after the page's text, not where they stand.

A footnote sits at the foot of its column, under the body text, often in the middle of a sentence that
runs on into the next column ("…obtained by the frequently" / "2 A batch is defined as…" / "occurred
biterms in texts"), so read in place it broke that sentence in two. A footnote is a run of lines in smaller
type at the end of a column, the first of them starting with its mark (a raised number or symbol, or "1.").
"""

from __future__ import annotations

import re
import statistics
from typing import Protocol, Sequence, TypeVar


class _Glyph(Protocol):
    text: str
    box: tuple[float, float, float, float]
    size: float


class TextLine(Protocol):
    """A line as layout.TextLine has it (this module comes before layout, which calls it)."""

    text: str
    size: float
    block: bool
    column: int
    turned: bool

    @property
    def chars(self) -> Sequence[_Glyph]: ...

    @property
    def y0(self) -> float: ...

    @property
    def y1(self) -> float: ...


Line = TypeVar("Line", bound=TextLine)

SMALLER = 0.93  # a footnote's type against the body's (9 pt under 10 pt: NeurIPS)
LOWER_PART = 0.45  # a footnote starts in this lower share of the page's text
MAX_SHARE = 0.4  # of its column's height, at most
MIN_BODY_LINES = 3  # lines of body text above it in its column
_MARK = re.compile(r"^\s*(?:[0-9]{1,2}|[*∗†‡§¶])")
_NUMBERED = re.compile(r"^\s*[0-9]{1,2}\.\s")  # "1. https://…", a footnote numbered in the line's own type


def footnotes_last(lines: Sequence[Line]) -> list[Line]:
    """The page's lines in reading order with each column's footnotes moved to the end, column by column."""
    body = [ln for ln in lines if not ln.block and not ln.turned and ln.text.strip()]
    if len(body) < MIN_BODY_LINES:
        return list(lines)
    size = statistics.median(ln.size for ln in body)
    top, bottom = max(ln.y1 for ln in body), min(ln.y0 for ln in body)
    notes: list[int] = []
    for column in dict.fromkeys(ln.column for ln in body):
        note = _column_footnote(lines, column, size, bottom + LOWER_PART * (top - bottom))
        notes += note + _run_on(lines, note, size, set(notes) | set(note))
    if not notes:
        return list(lines)
    taken = set(notes)
    kept = [ln for i, ln in enumerate(lines) if i not in taken]
    turned = [ln for ln in kept if ln.turned]
    return [ln for ln in kept if not ln.turned] + [lines[i] for i in notes] + turned


def _column_footnote(lines: Sequence[TextLine], column: int, size: float, below: float) -> list[int]:
    """Indices of the footnote lines that end ``column``: its last lines in smaller type, from the first
    that starts with a mark, if that is in the page's lower part, under enough body text."""
    members = [i for i, ln in enumerate(lines) if ln.column == column and not ln.turned and ln.text.strip()]
    small = 0
    while small < len(members) and _smaller(lines[members[-1 - small]], size):
        small += 1
    tail = members[len(members) - small :]
    start = next((k for k, i in enumerate(tail) if _marked(lines[i])), None)
    if start is None:
        return []
    note = tail[start:]
    above = [lines[i] for i in members[: len(members) - len(note)]]
    if lines[note[0]].y1 > below or sum(1 for ln in above if not _smaller(ln, size)) < MIN_BODY_LINES:
        return []
    column_height = max(ln.y1 for ln in above) - min(lines[i].y0 for i in note)
    note_height = lines[note[0]].y1 - min(lines[i].y0 for i in note)
    return note if note_height <= MAX_SHARE * column_height else []


def _run_on(lines: Sequence[TextLine], note: list[int], size: float, taken: set[int]) -> list[int]:
    """The lines right after a footnote, below it and in its type but without a mark of their own: its
    own lines that the reading order put in another column (a first line as wide as the page)."""
    more: list[int] = []
    index = note[-1] + 1 if note else len(lines)
    while index < len(lines) and index not in taken and not lines[index].turned:
        line, previous = lines[index], lines[index - 1]
        if not _smaller(line, size) or _marked(line) or line.y1 > previous.y1:
            break
        more.append(index)
        index += 1
    return more


def _smaller(line: TextLine, size: float) -> bool:
    return not line.block and line.size < SMALLER * size


def starts_footnote(line: TextLine, size: float) -> bool:
    """The line is in smaller type than the body's ``size`` and starts with a footnote's mark (under a
    footnote's rule it is no fraction's denominator, see formulas.lines)."""
    return _smaller(line, size) and _marked(line)


def _marked(line: TextLine) -> bool:
    """Starts with a footnote's mark: a number or symbol raised above the line or smaller than its text,
    or a number and a full stop."""
    if _NUMBERED.match(line.text):
        return True
    if not _MARK.match(line.text):
        return False
    glyphs = [c for c in line.chars if not c.text.isspace()]
    if len(glyphs) < 2:
        return False
    mark, rest = glyphs[0], glyphs[1:]
    text_size = statistics.median(c.size for c in rest)
    baseline = statistics.median(c.box[1] for c in rest)
    return mark.size < 0.85 * text_size or mark.box[1] > baseline + 0.2 * text_size
