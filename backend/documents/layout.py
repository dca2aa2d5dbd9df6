"""Text lines of a PDF page with their positions (pypdfium2), in reading order, and how they join.

Coordinates are PDF points with the origin at the bottom left, as pdfium reports them.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

BBox = tuple[float, float, float, float]  # x0, y0 (bottom), x1, y1 (top)

# CJK ideographs, kana and full-width forms: text that is written without spaces between words.
CJK_CHAR = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f]")
_SENTENCE_END = re.compile(r"[。！？；.!?;:：]$")


@dataclass
class Char:
    text: str
    box: BBox
    size: float  # font size in points


@dataclass
class TextLine:
    """One visual line, or a block (a Markdown table) that is placed by position but never joined."""
    text: str
    box: BBox
    size: float = 0.0
    chars: list[Char] = field(default_factory=list, repr=False)
    block: bool = False

    @property
    def x0(self) -> float:
        return self.box[0]

    @property
    def y0(self) -> float:
        return self.box[1]

    @property
    def x1(self) -> float:
        return self.box[2]

    @property
    def y1(self) -> float:
        return self.box[3]

    @property
    def height(self) -> float:
        return max(0.5, self.box[3] - self.box[1])


def union(boxes: Iterable[BBox]) -> BBox:
    boxes = list(boxes)
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


def center_inside(box: BBox, area: BBox, pad: float = 0.0) -> bool:
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return area[0] - pad <= cx <= area[2] + pad and area[1] - pad <= cy <= area[3] + pad


def is_visible_char(ch: str) -> bool:
    """Counts toward 'this page has a text layer': not whitespace, U+FFFD, control or private use."""
    if not ch or ch.isspace() or ch == "\ufffd":
        return False
    code = ord(ch)
    return code >= 0x20 and not (0xE000 <= code <= 0xF8FF) and code < 0xF0000


def read_lines(textpage: pdfium.PdfTextPage) -> list[TextLine]:
    """The page's text lines in reading order (top to bottom, then left to right)."""
    raw_lines = _lines_from_chars(textpage)
    return order_lines(raw_lines)


def _lines_from_chars(textpage: pdfium.PdfTextPage) -> list[TextLine]:
    # FPDFText_GetUnicode is per char index, so text and boxes stay aligned (get_text_range is UCS-2 only).
    handle = textpage.raw
    lines: list[TextLine] = []
    current: list[Char] = []
    for index in range(textpage.count_chars()):
        ch = chr(pdfium_c.FPDFText_GetUnicode(handle, index))
        if ch in "\r\n":
            if ch == "\n":
                _close_line(current, lines)
                current = []
            continue
        box = textpage.get_charbox(index)
        current.append(Char(ch, box, pdfium_c.FPDFText_GetFontSize(handle, index)))
    _close_line(current, lines)
    return lines


def _close_line(chars: list[Char], lines: list[TextLine]) -> None:
    line = line_from_chars(chars)
    if line is not None:
        lines.append(line)


def line_from_chars(chars: Sequence[Char]) -> Optional[TextLine]:
    """A line from its chars; None when nothing visible is left. Blank chars do not stretch the box."""
    solid = [c for c in chars if not c.text.isspace()]
    if not solid:
        return None
    text = re.sub(r"\s+", " ", "".join(c.text for c in chars)).strip()
    sizes = sorted(c.size for c in solid)
    return TextLine(text, union(c.box for c in solid), sizes[len(sizes) // 2], list(chars))


def order_lines(lines: Sequence[TextLine]) -> list[TextLine]:
    """Sort into rows top to bottom; pieces of one row are merged when they are close together."""
    ordered: list[TextLine] = []
    for row in _rows(sorted(lines, key=lambda ln: -(ln.y0 + ln.y1) / 2)):
        row.sort(key=lambda ln: ln.x0)
        merged = [row[0]]
        for piece in row[1:]:
            last = merged[-1]
            if not last.block and not piece.block and piece.x0 - last.x1 < 2.0 * max(last.size, piece.size, 1.0):
                merged[-1] = _merge(last, piece)
            else:
                merged.append(piece)
        ordered.extend(merged)
    return ordered


def _rows(lines: Iterable[TextLine]) -> list[list[TextLine]]:
    rows: list[list[TextLine]] = []
    for line in lines:
        if rows and not line.block and not rows[-1][0].block:
            top = max(ln.y1 for ln in rows[-1])
            bottom = min(ln.y0 for ln in rows[-1])
            overlap = min(top, line.y1) - max(bottom, line.y0)
            if overlap > 0.5 * min(line.height, top - bottom):
                rows[-1].append(line)
                continue
        rows.append([line])
    return rows


def _merge(left: TextLine, right: TextLine) -> TextLine:
    gap = right.x0 - left.x1
    needs_space = gap > 0.25 * max(left.size, 1.0) and not (
        CJK_CHAR.match(left.text[-1]) and CJK_CHAR.match(right.text[0]))
    text = left.text + (" " if needs_space else "") + right.text
    return TextLine(text, union([left.box, right.box]), max(left.size, right.size), left.chars + right.chars)


def join_paragraph_lines(left: str, right: str) -> str:
    """Join a wrapped line: drop a word-break hyphen, no space at CJK, one space between words."""
    if left.endswith("-") and len(left) > 1 and left[-2].isalpha() and right[:1].islower():
        return left[:-1] + right
    if CJK_CHAR.match(left[-1]) or CJK_CHAR.match(right[0]):
        return left + right
    return left + " " + right


def lines_to_text(lines: Sequence[TextLine], page_width: float = 0.0) -> str:
    """Paragraphs separated by blank lines: wrapped lines joined, blocks (tables) kept as they are."""
    text_lines = [ln for ln in lines if not ln.block]
    if not text_lines:
        return "\n\n".join(ln.text for ln in lines).strip()
    left_edge = min(ln.x0 for ln in text_lines)
    right_edge = _right_edge(text_lines, left_edge, page_width)
    pitch = _typical_pitch(text_lines)
    paragraphs: list[str] = []
    previous: Optional[TextLine] = None
    for line in lines:
        if previous is not None and _same_row(previous, line):
            paragraphs[-1] += " " + line.text  # far apart on one row: a code line number, a tab stop
        elif previous is not None and not _starts_paragraph(previous, line, right_edge, left_edge, pitch):
            paragraphs[-1] = join_paragraph_lines(paragraphs[-1], line.text)
        else:
            paragraphs.append(line.text)
        previous = line
    return "\n\n".join(p for p in paragraphs if p.strip())


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


def _starts_paragraph(previous: TextLine, line: TextLine, right_edge: float, left_edge: float,
                      pitch: float) -> bool:
    if previous.block or line.block:
        return True
    size = max(previous.size, line.size, 1.0)
    if line.y1 > previous.y1 or abs(previous.size - line.size) > 0.15 * size:
        return True  # a new column or a heading
    if pitch and previous.y0 - line.y0 > 1.45 * pitch:
        return True  # more space than between wrapped lines
    if right_edge - previous.x1 > _first_word_width(line) + size:
        return True  # the next line's first word would have fitted: the previous line ended on purpose
    return line.x0 > left_edge + 1.5 * size and line.x0 > previous.x0 + 1.5 * size  # indented first line
