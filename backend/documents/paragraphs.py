"""Paragraphs of a page's ordered lines: wrapped lines joined, a paragraph ended where the line stops
short of its block's right edge, more space follows than between wrapped lines, or the next line is
indented; a paragraph runs on into the next column when it did not end."""

from __future__ import annotations

import re
import statistics
from typing import Optional, Sequence

from backend.documents.layout import TextLine
from backend.text import CJK_CHAR, join_words

_SENTENCE_END = re.compile(r"[。！？；.!?;:：]$")


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
        elif previous is not None and not _starts_paragraph(previous, line, edges, pitch):
            paragraphs[-1] = join_paragraph_lines(paragraphs[-1], line.text)
        else:
            paragraphs.append(line.text)
        previous = line
    return "\n\n".join(p for p in paragraphs if p.strip())


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
    that are lists of short sentences never reach the real margin)."""
    rightmost = max(ln.x1 for ln in lines)
    return max(rightmost, page_width - left_edge) if page_width else rightmost


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


def _starts_paragraph(previous: TextLine, line: TextLine, edges: dict[int, tuple[float, float]], pitch: float) -> bool:
    if previous.block or line.block:
        return True
    size = max(previous.size, line.size, 1.0)
    if abs(previous.size - line.size) > 0.15 * size:
        return True  # a heading
    left_edge, right_edge = edges.get(line.column, (line.x0, line.x1))
    ended = edges.get(previous.column, (previous.x0, previous.x1))[1] - previous.x1 > _first_word_width(line) + size
    indented = line.x0 > left_edge + 1.5 * size
    if line.column != previous.column or line.y1 > previous.y1:
        # the next column: the paragraph goes on only if it ran to the margin without a full stop
        return ended or indented or bool(_SENTENCE_END.search(previous.text)) or previous.column == line.column
    if pitch and previous.y0 - line.y0 > 1.45 * pitch:
        return True  # more space than between wrapped lines
    if ended:
        return True  # the next line's first word would have fitted: the previous line ended on purpose
    return indented and line.x0 > previous.x0 + 1.5 * size  # indented first line
