"""Plots drawn with words: a scatter of thousands of separate short words (a t-SNE map of a vocabulary,
a word cloud) is a figure, not body text.

Found on the raw lines before the reading order is built (ordering 20,000 one-word lines cost minutes
a page): short lines are counted on a grid; a connected patch of dense cells holding many of them that
do not line up into a grid (a table's cells share baselines and column edges, a scatter's words do
not) is a plot. Its lines leave the body and become the figure's text, searchable once as one chunk.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Sequence

from backend.documents.figures import merge_boxes
from backend.documents.layout import BBox, TextLine, center_inside, union

CELL = 20.0  # points: the grid short lines are counted on
DENSE_CELL = 5  # short lines in one cell that make it part of a plot
MIN_PLOT_WORDS = 120  # fewer short lines are tick labels or a legend, not a plot of words
GRID_STEP = 0.25  # points: baselines and column edges this close are one
MAX_GRID_FILL = 4  # rows x columns at most this many times the words: a table written cell by cell
SHORT_CHARS = 24  # a plot's label is a word or two
SHORT_WORDS = 3
EDGE = CELL / 2  # short lines this close outside a plot's dense patches are its sparse edge


@dataclass
class WordPlot:
    """A region of a page drawn with words, and the lines found in it."""

    box: BBox
    lines: list[TextLine] = field(default_factory=list)

    def text(self, max_chars: int) -> str:
        """The plot's words top to bottom, left to right, each distinct word once, cut at ``max_chars``."""
        seen: set[str] = set()
        words: list[str] = []
        used = 0
        for line in sorted(self.lines, key=lambda ln: (-round(ln.y1), ln.x0)):
            for word in line.text.split():
                if word in seen:
                    continue
                if used + len(word) + 1 > max_chars:
                    return " ".join(words)
                seen.add(word)
                words.append(word)
                used += len(word) + 1
        return " ".join(words)


def split_word_plots(lines: Sequence[TextLine]) -> tuple[list[TextLine], list[WordPlot]]:
    """The page's lines without those of plots drawn with words, and the plots."""
    short = [ln for ln in lines if not ln.block and _is_short(ln)]
    if len(short) < MIN_PLOT_WORDS:
        return list(lines), []
    # patches of one plot are apart where it is sparse
    boxes = merge_boxes([union(ln.box for ln in patch) for patch in _dense_patches(short)], gap=CELL)
    plots = [WordPlot(box) for box in boxes]
    plots = [p for p in plots if _scattered([ln for ln in short if center_inside(ln.box, p.box)])]
    if not plots:
        return list(lines), []
    body: list[TextLine] = []
    for line in lines:
        home = next((p for p in plots if not line.block and _belongs(line, p)), None)
        if home is None:
            body.append(line)
        else:
            home.lines.append(line)
    return body, plots


def _belongs(line: TextLine, plot: WordPlot) -> bool:
    """Inside the plot, or a short line just outside it (the sparse edge of the scatter)."""
    if center_inside(line.box, plot.box):
        return True
    return center_inside(line.box, plot.box, pad=EDGE) and _is_short(line)


def _is_short(line: TextLine) -> bool:
    return len(line.text) <= SHORT_CHARS and len(line.text.split()) <= SHORT_WORDS


def _dense_patches(short: Sequence[TextLine]) -> list[list[TextLine]]:
    """Short lines of each connected patch of dense grid cells (8-neighbours) holding MIN_PLOT_WORDS."""
    cells: dict[tuple[int, int], list[TextLine]] = defaultdict(list)
    for line in short:
        cells[(int((line.x0 + line.x1) / 2 // CELL), int((line.y0 + line.y1) / 2 // CELL))].append(line)
    dense = {key for key, members in cells.items() if len(members) >= DENSE_CELL}
    patches: list[list[TextLine]] = []
    while dense:
        stack = [dense.pop()]
        members: list[TextLine] = []
        while stack:
            cx, cy = stack.pop()
            members += cells[(cx, cy)]
            for key in ((cx + dx, cy + dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1)):
                if key in dense:
                    dense.remove(key)
                    stack.append(key)
        if len(members) >= MIN_PLOT_WORDS:
            patches.append(members)
    return patches


def _scattered(words: Sequence[TextLine]) -> bool:
    """Words that do not form a grid: a table's cells, however small and far apart, sit on few baselines
    and few column edges (rows x columns ~ cells); a scatter's words are all at different places."""
    if len(words) < MIN_PLOT_WORDS:
        return False
    rows = len({round(ln.y0 / GRID_STEP) for ln in words})
    columns = min(len({round(ln.x0 / GRID_STEP) for ln in words}), len({round(ln.x1 / GRID_STEP) for ln in words}))
    return rows * columns > MAX_GRID_FILL * len(words)
