"""Line numbers in a page's margin (a paper's review copy: "267", "268", … beside every line).

They stand on the rows of the text they count, so they were read into it: at the start of a left column's
lines and the end of a right column's, where paragraphs joined them mid-sentence ("can be help- 272 ful").
A page's line numbers are a column of small whole numbers that count up down the page (by one, or by five
where every fifth line is numbered), each apart from the text beside it; they are taken out of the page's
glyphs before lines are formed.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Callable, Optional, Protocol, Sequence


class Char(Protocol):
    """A glyph as layout.Char has it (this module comes before layout, which calls it)."""

    text: str
    box: tuple[float, float, float, float]
    size: float


MIN_NUMBERS = 6  # fewer numbers in one column of the margin: a list or a table's column, not line numbers
MAX_DIGITS = 4
SMALLER = 0.9  # line numbers are set smaller than the body text
ALIGNED = 1.5  # points: numbers of one column share their left or their right edge
APART = 0.8  # ems of space between a number and the text on its row
COUNTING_UP = 0.7  # the share of numbers, read down the column, that are the one above plus the step
MAX_STEP = 10


@dataclass
class _Number:
    start: int  # index of its first glyph in the page's glyphs
    end: int
    value: int
    x0: float
    x1: float
    middle: float  # its height on the page


def margin_line_numbers(chars: Sequence[Optional[Char]]) -> set[int]:
    """Indices (into ``chars``, where None is a line break) of the glyphs of the page's line numbers."""
    numbers = _standalone_numbers(chars)
    if len(numbers) < MIN_NUMBERS:
        return set()
    found: set[int] = set()
    for column in _columns(numbers):
        if len(column) >= MIN_NUMBERS and _counts_up(column):
            for number in column:
                found.update(range(number.start, number.end))
    return found


def _standalone_numbers(chars: Sequence[Optional[Char]]) -> list[_Number]:
    """Runs of at most MAX_DIGITS digits, smaller than the page's body text, set apart from the glyphs
    before and after them (a number inside a sentence or a formula runs into its neighbours)."""
    sizes = [c.size for c in chars if c is not None and not c.text.isspace()]
    if not sizes:
        return []
    body = statistics.median(sizes)
    numbers: list[_Number] = []
    index = 0
    while index < len(chars):
        end = _digits_end(chars, index)
        if end == index:
            index += 1
            continue
        run = [c for c in chars[index:end] if c is not None]
        if len(run) <= MAX_DIGITS and max(c.size for c in run) < SMALLER * body and _apart(chars, index, end):
            value = int("".join(c.text for c in run))
            middle = (min(c.box[1] for c in run) + max(c.box[3] for c in run)) / 2
            numbers.append(_Number(index, end, value, run[0].box[0], run[-1].box[2], middle))
        index = end
    return numbers


def _digits_end(chars: Sequence[Optional[Char]], start: int) -> int:
    end = start
    while end < len(chars) and (char := chars[end]) is not None and char.text.isascii() and char.text.isdigit():
        end += 1
    return end


def _apart(chars: Sequence[Optional[Char]], start: int, end: int) -> bool:
    first, last = chars[start], chars[end - 1]
    assert first is not None and last is not None
    room = APART * max(first.size, 1.0)
    before = _visible_neighbour(chars, start, -1)
    after = _visible_neighbour(chars, end - 1, 1)
    return (before is None or _row_apart(before, first, room)) and (after is None or _row_apart(last, after, room))


def _visible_neighbour(chars: Sequence[Optional[Char]], index: int, step: int) -> Optional[Char]:
    index += step
    while 0 <= index < len(chars):
        char = chars[index]
        if char is not None and not char.text.isspace():
            return char
        index += step
    return None


def _row_apart(left: Char, right: Char, room: float) -> bool:
    """``right`` is not on ``left``'s row, or it is and stands at least ``room`` away from it."""
    same_row = min(left.box[3], right.box[3]) > max(left.box[1], right.box[1])
    return not same_row or abs(right.box[0] - left.box[2]) >= room


def _columns(numbers: Sequence[_Number]) -> list[list[_Number]]:
    """The numbers grouped by the edge they share (left-aligned or right-aligned), each read top down."""
    columns: list[list[_Number]] = []
    taken: set[int] = set()
    groups = _aligned(numbers, lambda n: n.x0) + _aligned(numbers, lambda n: n.x1)
    for group in sorted(groups, key=len, reverse=True):
        fresh = [n for n in group if n.start not in taken]
        if len(fresh) >= MIN_NUMBERS:
            columns.append(sorted(fresh, key=lambda n: -n.middle))
            taken.update(n.start for n in fresh)
    return columns


def _aligned(numbers: Sequence[_Number], edge: Callable[[_Number], float]) -> list[list[_Number]]:
    """Runs of numbers whose ``edge`` lies within ALIGNED of the next one's, left to right."""
    groups: list[list[_Number]] = []
    for number in sorted(numbers, key=edge):
        if groups and edge(number) - edge(groups[-1][-1]) <= ALIGNED:
            groups[-1].append(number)
        else:
            groups.append([number])
    return groups


def _counts_up(column: Sequence[_Number]) -> bool:
    """Read down the column, most numbers are the one above plus the same step (1, or 5 where only every
    fifth line is numbered)."""
    steps = [below.value - above.value for above, below in zip(column, column[1:])]
    step = max(set(steps), key=steps.count)
    return 0 < step <= MAX_STEP and steps.count(step) >= COUNTING_UP * len(steps)
