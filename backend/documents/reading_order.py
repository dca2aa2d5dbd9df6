"""Reading order of a page from its geometry: recursive XY-cut on whitespace gutters.

The same function orders the text lines of a native page and the OCR boxes of a scan. A region is cut
at a vertical gutter when lines sit side by side on both sides of it (columns); lines that cross the
gutter (titles, abstracts, wide figure captions, wide tables) are full-width blocks that split the
region into bands, and each band is read column by column. A region with no valid gutter is cut at its
horizontal whitespace gaps, so a two-column part below a three-column part finds its own gutter.

Coordinates are PDF points, origin bottom left (OCR boxes are flipped by the caller).
"""

from __future__ import annotations

import bisect
import statistics
from dataclasses import dataclass
from typing import Protocol, Sequence

_MAX_DEPTH = 12
_GUTTER_CANDIDATES = 6
_MIN_COLUMN_EMS = 5.0  # median line width of a text column, in font sizes: table cells are narrower
_MIN_PROSE_LINES = 6  # ... or this many lines that long holding most of its characters (formulas between)
_PROSE_SHARE = 0.7
_EDGE_SHARE = 0.05
_HEADING_SIZE = 1.25  # a line this much bigger than the body text is a heading
# a refused gutter makes the column test unsure when this many rows face each other across it, with lines
# on both sides this many font sizes long (the median)
_MIN_FACING_ROWS = 4
_MIN_SIDE_EMS = 3.0
_NARROW_GUTTER_EMS = 0.2  # an uncrossed strip this wide (a word space is ~0.25 em, but not on 4 rows in a line)
_WIDE_GAP_LINES = 2.5  # whitespace this many font sizes high across a region parts it before any gutter  # a gutter is not in the outer 5 % of the region


class Boxed(Protocol):
    box: tuple[float, float, float, float]
    size: float


@dataclass
class Leaf:
    """Lines read top to bottom as one piece; ``column`` numbers the column region they belong to."""

    lines: list
    column: int


class _Columns:
    """Hands out column numbers: 0 is the whole page, every gutter cut makes two new ones. Counts the
    regions where the column test was unsure (see ``column_test_unsure``)."""

    def __init__(self, check_unsure: bool = False) -> None:
        self.count = 1
        self.check_unsure = check_unsure  # only when asked: it costs a pass over every refused strip
        self.unsure = 0

    def new(self) -> int:
        self.count += 1
        return self.count - 1


def reading_leaves(lines: Sequence[Boxed], obstacles: Sequence[tuple[float, float, float, float]] = ()) -> list[Leaf]:
    """The lines cut into leaves in reading order; inside a leaf lines are still unsorted. ``obstacles``
    are boxes without text that still take part in the cut (images: a wide figure spans the columns)."""
    return _leaves(lines, obstacles, _Columns())


def column_test_unsure(lines: Sequence[Boxed], obstacles: Sequence[tuple[float, float, float, float]] = ()) -> bool:
    """Whether geometry alone may have read this page wrong: somewhere text sits side by side on either
    side of a vertical whitespace strip (four rows facing each other, lines over 3 font sizes long on both
    sides), yet the strip was refused as a gutter (a line crossing it beside the others, one side's lines
    too short for a text column) or is narrower than a gutter may be. Pages read as one column, or whose
    gutters all held, are sure."""
    columns = _Columns(check_unsure=True)
    _leaves(lines, obstacles, columns)
    return columns.unsure > 0


def _leaves(
    lines: Sequence[Boxed], obstacles: Sequence[tuple[float, float, float, float]], columns: _Columns
) -> list[Leaf]:
    if not lines:
        return []
    size = statistics.median(max(1.0, ln.size) for ln in lines)
    blocks = [_Obstacle(box, size) for box in obstacles if not any(_inside(ln, box) for ln in lines)]
    leaves = _cut(list(lines) + blocks, 0, size, columns, 0)
    kept = [Leaf([ln for ln in leaf.lines if not isinstance(ln, _Obstacle)], leaf.column) for leaf in leaves]
    return [leaf for leaf in kept if leaf.lines]


@dataclass
class _Obstacle:
    box: tuple[float, float, float, float]
    size: float
    block: bool = True


def _inside(line, box) -> bool:
    cx, cy = _centre_x(line), _centre_y(line)
    return box[0] <= cx <= box[2] and box[1] <= cy <= box[3]


def _cut(lines: list, column: int, size: float, columns: _Columns, depth: int) -> list[Leaf]:
    if len(lines) < 2 or depth > _MAX_DEPTH:
        return [Leaf(lines, column)]
    pieces = _horizontal_pieces(lines, _WIDE_GAP_LINES * size)
    if len(pieces) == 1:
        pieces = _around_lone_headings(lines, size)
    if len(pieces) > 1:  # whitespace across the region (a figure with no text layer), a title: parts
        return [leaf for piece in pieces for leaf in _cut(piece, column, size, columns, depth + 1)]
    inner = _inner_strips(lines)  # (a sweep over every line's edges: once for both tests below)
    gutter = _find_gutter(lines, inner, size, columns)
    if gutter is not None:
        return _cut_at_gutter(lines, gutter, column, size, columns, depth)
    pieces = _columns_beyond_a_figure(lines, inner, size)
    if len(pieces) == 1:
        pieces = _horizontal_pieces(lines, size)
    if len(pieces) > 1:
        return [leaf for piece in pieces for leaf in _cut(piece, column, size, columns, depth + 1)]
    return [Leaf(lines, column)]


def _cut_at_gutter(
    lines: list, gutter: tuple[float, float], column: int, size: float, columns: _Columns, depth: int
) -> list[Leaf]:
    """Bands between full-width lines, each band read left column then right column."""
    left_id, right_id = columns.new(), columns.new()
    out: list[Leaf] = []
    for kind, group in _bands(lines, gutter):
        if kind == "wide":
            out += _cut(group, column, size, columns, depth + 1)
            continue
        left = [ln for ln in group if _centre_x(ln) < (gutter[0] + gutter[1]) / 2]
        right = [ln for ln in group if _centre_x(ln) >= (gutter[0] + gutter[1]) / 2]
        out += _cut(left, left_id, size, columns, depth + 1) if left else []
        out += _cut(right, right_id, size, columns, depth + 1) if right else []
    return out


def _bands(lines: list, gutter: tuple[float, float]) -> list[tuple[str, list]]:
    """Consecutive runs, top to bottom, of lines crossing the gutter ("wide") and of the others."""
    runs: list[tuple[str, list]] = []
    for line in sorted(lines, key=lambda ln: -_centre_y(ln)):
        kind = "wide" if _crosses(line, gutter) else "columns"
        if runs and runs[-1][0] == kind:
            runs[-1][1].append(line)
        else:
            runs.append((kind, [line]))
    return runs


def _find_gutter(
    lines: list, inner: list[tuple[float, float, int]], size: float, columns: _Columns
) -> tuple[float, float] | None:
    """The least-crossed vertical strip (of the region's ``inner`` strips) that separates side-by-side
    columns, or None (counted as unsure when a refused strip still had side-by-side groups of lines on both
    sides)."""
    strips = _gutter_candidates(inner, size)
    for a, b, _ in strips:
        if _valid_gutter(lines, (a, b), size):
            return a, b
    if not columns.check_unsure:
        return None
    # refused, or too narrow for a gutter: unsure if it still parts side-by-side text
    narrow = sorted(
        (s for s in inner if _NARROW_GUTTER_EMS * size <= s[1] - s[0] < 0.4 * size and s[2] == 0),
        key=lambda s: -(s[1] - s[0]),
    )
    candidates = strips + narrow[:_GUTTER_CANDIDATES]
    columns.unsure += any(_side_by_side(lines, (a, b), size) for a, b, _ in candidates)
    return None


def _inner_strips(lines: list) -> list[tuple[float, float, int]]:
    """The coverage strips of the region away from its outer edges (a gutter is not in the outer 5 %)."""
    x0 = min(ln.box[0] for ln in lines)
    x1 = max(ln.box[2] for ln in lines)
    margin = _EDGE_SHARE * (x1 - x0)
    return [s for s in _coverage(lines) if s[0] >= x0 + margin and s[1] <= x1 - margin]


def _gutter_candidates(inner: list[tuple[float, float, int]], size: float) -> list[tuple[float, float, int]]:
    """The strips wide enough for a gutter, the least crossed (then the widest) first."""
    wide_enough = (s for s in inner if s[1] - s[0] >= 0.4 * size)
    return sorted(wide_enough, key=lambda s: (s[2], -(s[1] - s[0])))[:_GUTTER_CANDIDATES]


def _columns_beyond_a_figure(lines: list, inner: list[tuple[float, float, int]], size: float) -> list[list]:
    """[above, below] where the region's lines that cross a strip all stand above (or all below) two
    columns that face each other across it with no whitespace between: a figure's labels and caption as
    wide as the page, right on top of the columns. A figure's labels stand beside each other, so the
    strip failed as a gutter for the whole region. [lines] when there is no such cut."""
    for a, b, _ in _gutter_candidates(inner, size):
        wide = [ln for ln in lines if _crosses(ln, (a, b))]
        if not wide:
            continue
        lowest, highest = min(ln.box[1] for ln in wide), max(ln.box[3] for ln in wide)
        for below, columns_part, rest in (
            (True, [ln for ln in lines if ln.box[3] <= lowest], [ln for ln in lines if ln.box[3] > lowest]),
            (False, [ln for ln in lines if ln.box[1] >= highest], [ln for ln in lines if ln.box[1] < highest]),
        ):
            if rest and _faces(columns_part, (a, b)) and _valid_gutter(columns_part, (a, b), size):
                return _columns_apart(columns_part, rest, below, (a, b), size)
    return [lines]


def _columns_apart(columns_part: list, rest: list, below: bool, gutter: tuple[float, float], size: float) -> list[list]:
    """[rest, columns_part] (the columns ``below`` the rest) or [columns_part, rest]; text set apart by
    whitespace at the columns' edge next to the rest, and not in two columns itself (a heading over a
    list of references that are as wide as the page), goes with the rest."""
    pieces = _horizontal_pieces(columns_part, size)
    if below:
        while len(pieces) > 1 and not _faces(pieces[0], gutter):
            rest = rest + pieces.pop(0)
        return [rest, [ln for piece in pieces for ln in piece]]
    while len(pieces) > 1 and not _faces(pieces[-1], gutter):
        rest = pieces.pop() + rest
    return [[ln for piece in pieces for ln in piece], rest]


def _side_by_side(lines: list, gutter: tuple[float, float], size: float) -> bool:
    """Rows of text on both sides of the strip: at least four rows where lines face each other, and on
    each side lines longer than an equation number or a table cell usually is."""
    left, right = _text_sides(lines, gutter)
    if len(left) < _MIN_FACING_ROWS or len(right) < _MIN_FACING_ROWS:
        return False
    if min(statistics.median(ln.box[2] - ln.box[0] for ln in side) for side in (left, right)) < _MIN_SIDE_EMS * size:
        return False
    return _facing_rows(left, right)


def _text_sides(lines: list, gutter: tuple[float, float]) -> tuple[list, list]:
    """The lines (not tables) wholly left of the strip, and those wholly right of it."""
    left = [ln for ln in lines if ln.box[2] <= gutter[0] + 0.01 and not getattr(ln, "block", False)]
    right = [ln for ln in lines if ln.box[0] >= gutter[1] - 0.01 and not getattr(ln, "block", False)]
    return left, right


def _faces(lines: list, gutter: tuple[float, float]) -> bool:
    return _facing_rows(*_text_sides(lines, gutter))


def _facing_rows(left: list, right: list) -> bool:
    """At least _MIN_FACING_ROWS lines of ``left`` with a line of ``right`` on their row."""
    facing = 0
    for a in left:
        facing += any(_beside(a, b) for b in right)
        if facing >= _MIN_FACING_ROWS:
            return True
    return False


def _coverage(lines: list) -> list[tuple[float, float, int]]:
    """Strips of x between line edges with how many lines cover each (a sweep over the edges)."""
    events = sorted([(ln.box[0], 1) for ln in lines] + [(ln.box[2], -1) for ln in lines])
    strips: list[tuple[float, float, int]] = []
    count = 0
    for (x, step), (next_x, _) in zip(events, events[1:]):
        count += step
        if next_x > x:
            strips.append((x, next_x, count))
    return strips


def _valid_gutter(lines: list, gutter: tuple[float, float], size: float) -> bool:
    """Columns on both sides that sit side by side, and no crossing line beside any other line."""
    left = [ln for ln in lines if ln.box[2] <= gutter[0] + 0.01]
    right = [ln for ln in lines if ln.box[0] >= gutter[1] - 0.01]
    wide = [ln for ln in lines if _crosses(ln, gutter)]
    if not left or not right or not (_is_column(left, size) and _is_column(right, size)):
        return False
    if not any(_beside(a, b) for a in left for b in right):
        return False
    sides = left + right
    return not any(_beside(w, other) for w in wide for other in sides)


def _is_column(lines: list, size: float) -> bool:
    """Text columns are filled with long lines; table cells, labels and line numbers are short. A column
    of prose between display formulas holds many short pieces too (a sum's limits, a subscript, "(4)"):
    it is a column when most of its characters are on enough long lines."""
    if all(getattr(ln, "block", False) for ln in lines):
        return True
    text = [ln for ln in lines if not getattr(ln, "block", False)]
    if statistics.median(ln.box[2] - ln.box[0] for ln in text) >= _MIN_COLUMN_EMS * size:
        return True
    long = [ln for ln in text if ln.box[2] - ln.box[0] >= _MIN_COLUMN_EMS * size]
    chars = sum(len(getattr(ln, "text", "")) for ln in text)
    return len(long) >= _MIN_PROSE_LINES and sum(len(getattr(ln, "text", "")) for ln in long) >= _PROSE_SHARE * chars


def _beside(a, b) -> bool:
    overlap = min(a.box[3], b.box[3]) - max(a.box[1], b.box[1])
    return overlap > 0 and overlap > 0.3 * min(a.box[3] - a.box[1], b.box[3] - b.box[1])


def _crosses(line, gutter: tuple[float, float]) -> bool:
    return line.box[0] < gutter[1] - 0.01 and line.box[2] > gutter[0] + 0.01


def _horizontal_pieces(lines: list, gap: float) -> list[list]:
    """Split at horizontal whitespace at least ``gap`` high (between paragraphs, blocks, parts)."""
    ordered = sorted(lines, key=lambda ln: -ln.box[3])
    pieces: list[list] = [[ordered[0]]]
    bottom = ordered[0].box[1]
    for line in ordered[1:]:
        if bottom - line.box[3] >= gap:
            pieces.append([line])
        else:
            pieces[-1].append(line)
        bottom = min(bottom, line.box[1])
    return pieces


def _around_lone_headings(lines: list, size: float) -> list[list]:
    """Cut above and below each line in a bigger font with nothing beside it (a title over the columns,
    even a short centred one that does not cross the gutter)."""
    ordered = sorted(lines, key=lambda ln: -_centre_y(ln))
    by_bottom = sorted(lines, key=lambda ln: ln.box[1])
    bottoms = [ln.box[1] for ln in by_bottom]
    tallest = max((ln.box[3] - ln.box[1] for ln in lines), default=0.0)
    pieces: list[list] = [[]]
    for line in ordered:
        # only lines whose bottom is within the tallest line's height below this top can overlap it:
        # a page of 20,000 short lines is not compared pair by pair
        near = by_bottom[bisect.bisect_right(bottoms, line.box[1] - tallest) : bisect.bisect_left(bottoms, line.box[3])]
        lone = line.size > _HEADING_SIZE * size and not any(_beside(line, o) for o in near if o is not line)
        if lone:
            pieces += [[line], []]
        else:
            pieces[-1].append(line)
    return [p for p in pieces if p]


def _centre_x(line) -> float:
    return (line.box[0] + line.box[2]) / 2


def _centre_y(line) -> float:
    return (line.box[1] + line.box[3]) / 2
