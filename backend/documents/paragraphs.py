"""Paragraphs of a page's ordered lines: wrapped lines joined, a paragraph ended where the line stops
short of its block's right edge, more space follows than between wrapped lines, or the next line is
indented; a paragraph runs on into the next column when it did not end."""

from __future__ import annotations

import re
import statistics
from typing import Optional, Sequence

from backend.documents.footnotes import starts_footnote
from backend.documents.layout import TextLine
from backend.documents.tex_fonts import TALL_BRACE_PIECES
from backend.text import CJK_CHAR, join_words

_SENTENCE_END = re.compile(r"[。！？；.!?;:：]$")
_LIST_ITEM = re.compile(r"(\[[^\]\s]{1,10}\]|\(?\d{1,3}[.)]|\(?[a-z][.)]|[•·▪◦–-])\s")
_FIGURE = re.compile(r"[-+−±(]*[\d.,]+[%)*]*")

_NO_BRACE_PIECES = dict.fromkeys(map(ord, TALL_BRACE_PIECES))  # they placed lines; they are no text


def join_paragraph_lines(left: str, right: str) -> str:
    """Join a wrapped line: drop a word-break hyphen, no space at CJK, one space between words."""
    if left.endswith("-") and len(left) > 1 and left[-2].isalpha() and right[:1].islower():
        return left[:-1] + right
    return join_words(left, right)


def lines_to_text(lines: Sequence[TextLine], page_width: float = 0.0) -> str:
    """Paragraphs separated by blank lines: wrapped lines joined, blocks (tables) kept as they are.
    Margins are measured per column, and a paragraph runs on into the next column when it did not end."""
    text_lines = [ln for ln in lines if not ln.block]
    if not text_lines:
        return "\n\n".join(ln.text for ln in lines).strip()
    edges = column_edges(body_text_lines(lines) or text_lines, page_width)
    pitch = _typical_pitch(text_lines)
    blocks = _narrower_blocks(lines, edges)
    body_size = statistics.median(ln.size for ln in text_lines)
    paragraphs: list[str] = []
    previous: Optional[TextLine] = None
    for line in lines:
        if previous is not None and (previous.equation or line.equation):
            if previous.equation and line.equation:
                paragraphs[-1] += " " + line.text  # the lines of one display equation, in reading order
            else:
                paragraphs.append(line.text)
        elif previous is not None and previous.column == line.column and _same_row(previous, line):
            paragraphs[-1] += " " + line.text  # far apart on one row: a code line number, a tab stop
        elif starts_footnote(line, body_size):
            paragraphs.append(line.text)  # after the page's last line, which may run on to the next page
        elif previous is not None and not _starts_paragraph(previous, line, edges, pitch, blocks):
            paragraphs[-1] = join_paragraph_lines(paragraphs[-1], line.text)
        else:
            paragraphs.append(line.text)
        previous = line
    return "\n\n".join(p for p in paragraphs if p.strip()).translate(_NO_BRACE_PIECES)


def body_text_lines(lines: Sequence[TextLine]) -> list[TextLine]:
    """The lines that set the body's margins: not a table, not a turned run. Taken for the left edge,
    arXiv's stamp up the margin set the right one as far out, and every body line "ended early"."""
    return [ln for ln in lines if not ln.block and not ln.turned]


def column_edges(lines: Sequence[TextLine], page_width: float) -> dict[int, tuple[float, float]]:
    """Left and right edge of each column: where its lines start and where wrapped lines end."""
    edges: dict[int, tuple[float, float]] = {}
    for column in {ln.column for ln in lines}:
        members = [ln for ln in lines if ln.column == column]
        left = min(ln.x0 for ln in members)
        edges[column] = (left, _right_edge(members, left, page_width if column == 0 else 0.0))
    return edges


def _right_edge(lines: Sequence[TextLine], left_edge: float, page_width: float) -> float:
    """Where wrapped lines end: the rightmost line, or a right margin as wide as the left one (pages
    that are lists of short sentences never reach the real margin). Lines that end together at the
    rightmost are that margin: a two-column paper's last page may fill its left column only."""
    rightmost = max(ln.x1 for ln in lines)
    flush = sum(1 for ln in lines if rightmost - ln.x1 < max(ln.size, 1.0))
    if not page_width or flush >= max(3, len(lines) // 4):
        return rightmost
    return max(rightmost, page_width - left_edge)


def _first_word_width(line: TextLine) -> float:
    """Roughly how wide the line's first word is: a CJK char is one em, a Latin char about half."""
    if CJK_CHAR.match(line.text[0]):
        return line.size
    word = line.text.split(" ", 1)[0]
    return 0.5 * line.size * len(word)


def _same_row(a: TextLine, b: TextLine) -> bool:
    if a.block or b.block:
        return False
    overlap = min(a.y1, b.y1) - max(a.y0, b.y0)
    return overlap > 0.5 * min(a.height, b.height) and b.x0 >= a.x1


def _typical_pitch(lines: Sequence[TextLine]) -> float:
    steps = [a.y0 - b.y0 for a, b in zip(lines, lines[1:]) if 0 < a.y0 - b.y0 < 4 * max(a.size, 1.0)]
    return statistics.median(steps) if steps else 0.0


def _narrower_blocks(
    lines: Sequence[TextLine], edges: dict[int, tuple[float, float]]
) -> dict[int, tuple[float, float]]:
    """The right edge and line pitch of each line inside a narrower block: three or more lines of one
    size set in from the column's left edge at one x (the first may be indented further), most of the
    column wide, all but the last ending together short of the column's right edge (justified: an
    abstract, a quotation). Measured against the column's edge, each of their lines "ended early". Code,
    lists and axis labels are not such a block. Its pitch, often tighter than the body's (smaller type),
    tells where it ends. Keyed by ``id`` of the line."""
    rights: dict[int, tuple[float, float]] = {}
    run: list[TextLine] = []
    for line in [*lines, None]:
        if line is not None and run and _continues_block(run, line):
            run.append(line)
            continue
        rights.update(_justified_right(run, edges))
        run = [line] if line is not None and _set_in(line, edges) else []
    return rights


def _set_in(line: TextLine, edges: dict[int, tuple[float, float]]) -> bool:
    usable = _prose(line) and line.column in edges
    return usable and line.x0 > edges[line.column][0] + 1.5 * max(line.size, 1.0)


def _running_text(line: TextLine) -> bool:
    """Not a table, a turned run or a display equation: a line that may wrap into the next."""
    return not (line.block or line.turned or line.equation)


def _prose(line: TextLine) -> bool:
    """Words, not a table's row of figures ("Dev 4772 4727 1470 2672 585") whose rows end together too."""
    if not _running_text(line):
        return False
    words = line.text.split()
    return 3 * sum(1 for w in words if _FIGURE.fullmatch(w)) <= len(words)


def _continues_block(run: list[TextLine], line: TextLine) -> bool:
    first, size = run[0], max(run[0].size, 1.0)
    if not _running_text(line) or line.column != first.column or abs(line.size - first.size) > 0.15 * size:
        return False
    step = run[-2].y0 - run[-1].y0 if len(run) > 1 else 1.3 * size
    if not 0 < run[-1].y0 - line.y0 <= 1.25 * step:
        return False  # more space than between wrapped lines: the block ended
    left = min(ln.x0 for ln in run[1:]) if len(run) > 1 else first.x0
    return abs(line.x0 - left) <= 2.0 or (len(run) == 1 and 0 < first.x0 - line.x0 <= 3 * size)


def _justified_right(run: list[TextLine], edges: dict[int, tuple[float, float]]) -> dict[int, tuple[float, float]]:
    if len(run) < 3:
        return {}
    size = max(run[0].size, 1.0)
    left_edge, right_edge = edges[run[0].column]
    right = max(ln.x1 for ln in run)
    wide = right - min(ln.x0 for ln in run) >= 0.6 * (right_edge - left_edge)  # not a list, not axis labels
    flush = all(right - ln.x1 < 1.5 * size for ln in run[:-1])  # justified: only its last line ends early
    if not (wide and flush) or right > right_edge - size:
        return {}
    pitch = _typical_pitch(run)
    return {id(ln): (right, pitch) for ln in run}


def _starts_paragraph(
    previous: TextLine,
    line: TextLine,
    edges: dict[int, tuple[float, float]],
    pitch: float,
    blocks: dict[int, tuple[float, float]],
) -> bool:
    if previous.block or line.block:
        return True
    size = max(previous.size, line.size, 1.0)
    if abs(previous.size - line.size) > 0.15 * size:
        return True  # a heading
    left_edge, right_edge = edges.get(line.column, (line.x0, line.x1))
    previous_right = edges.get(previous.column, (previous.x0, previous.x1))[1]
    if id(previous) in blocks:  # inside a narrower block: its own right edge and line pitch
        previous_right, pitch = blocks[id(previous)][0], blocks[id(previous)][1] or pitch
    ended = previous_right - previous.x1 > _first_word_width(line) + size
    indented = line.x0 > left_edge + 1.5 * size
    if line.column != previous.column or line.y1 > previous.y1:
        # the next column: the paragraph goes on only if it ran to the margin without a full stop
        return ended or indented or bool(_SENTENCE_END.search(previous.text)) or previous.column == line.column
    if pitch and previous.y0 - line.y0 > 1.45 * pitch:
        return True  # more space than between wrapped lines
    if ended:
        return True  # the next line's first word would have fitted: the previous line ended on purpose
    if _LIST_ITEM.match(line.text) and line.x0 < previous.x0 - size:
        return True  # the next item of a list whose items hang: "[44] …" out from under "[43] …"
    # an indented first line, unless it is the rest of an item set in under its number or bullet
    return indented and line.x0 > previous.x0 + 1.5 * size and not _LIST_ITEM.match(previous.text)
