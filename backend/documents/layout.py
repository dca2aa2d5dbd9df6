"""Text lines of a PDF page with their positions (pypdfium2), in reading order, and how they join.

Coordinates are PDF points with the origin at the bottom left, as pdfium reports them.
"""

from __future__ import annotations

import ctypes
import math
import re
import unicodedata
from dataclasses import dataclass, field, replace
from typing import Iterable, Iterator, Optional, Sequence

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from backend.documents.footnotes import footnotes_last
from backend.documents.line_numbers import margin_line_numbers
from backend.documents.reading_order import reading_leaves
from backend.documents.tex_fonts import DELIMITER_CODES, NEGATION, delimiter_piece, shown_char
from backend.text import CJK_CHAR

BBox = tuple[float, float, float, float]  # x0, y0 (bottom), x1, y1 (top)
UNREADABLE = "\ufffd"  # an unmapped control code's glyph: until garbled.read_garbled, which drops it

_STACK_MAX = 16  # longer pieces are text lines, never the parts of a fraction
# Operators whose limits display math sets below (and above) them: a stack that ends in one is no fraction
_OPERATORS = r"(?:arg ?min|arg ?max|lim ?inf|lim ?sup|min|max|sup|inf|lim|det|gcd|Pr)|[∑∏∐∫∮∬∭⋃⋂⨁⨂⨀⋁⋀]"
_ENDS_IN_OPERATOR = re.compile(rf"(?<![A-Za-z]){_OPERATORS}$")
_OPERATOR_WITH_LIMIT = re.compile(rf"^{_OPERATORS}(?:_\{{.*\}})?$")
LEVEL_RADIANS = math.radians(6)  # a scan's text layer may lean a degree or two and still be level


@dataclass
class Char:
    text: str
    box: BBox
    size: float  # font size in points
    level: bool = True  # drawn level (not turned); turned text (arXiv's stamp up the margin) makes lines of its own
    unmapped_font: str = ""  # the font of a glyph pdfium has no Unicode for (garbled: it may draw noise)


@dataclass
class TextLine:
    """One visual line, or a block (a Markdown table) that is placed by position but never joined."""

    text: str
    box: BBox
    size: float = 0.0
    chars: list[Char] = field(default_factory=list, repr=False)
    block: bool = False
    column: int = 0  # which column region of the page (0: the full width), set by order_lines
    equation: bool = False  # a display equation line (equations.mark_equations): a paragraph of its own
    turned: bool = False  # a run of turned glyphs: kept out of the rows, read after the page (order_lines)

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


def read_lines(textpage: pdfium.PdfTextPage, obstacles: Sequence[BBox] = ()) -> list[TextLine]:
    """The page's text lines in reading order (columns, full-width blocks; see reading_order).
    ``obstacles``: image boxes, which take part in finding columns and full-width blocks."""
    return order_lines(raw_lines(textpage), obstacles)


def raw_lines(textpage: pdfium.PdfTextPage) -> list[TextLine]:
    """The page's text lines in the order pdfium gives its glyphs (``order_lines`` puts them in reading
    order; it does not change this list, so one reading can be ordered twice). Runs of turned glyphs (the
    arXiv stamp up the first page's margin, a turned axis label) are lines of their own, ``turned``."""
    chars = _without_line_numbers(_negated(list(_page_chars(textpage))))
    turned = sum(1 for c in chars if c is not None and not c.level)
    if not turned:
        return _level_lines(chars)
    if 2 * turned > sum(1 for c in chars if c is not None):  # a page drawn turned as a whole: all alike
        return _level_lines([c if c is None or c.level else replace(c, level=True) for c in chars])
    return _level_lines(chars) + _turned_runs(chars)


def _without_line_numbers(chars: list[Optional[Char]]) -> list[Optional[Char]]:
    """The page's glyphs with line numbers in its margin (a review copy's) taken out: a line ends there."""
    numbers = margin_line_numbers(chars)
    return [None if index in numbers else char for index, char in enumerate(chars)] if numbers else chars


def _level_lines(chars: Sequence[Optional[Char]]) -> list[TextLine]:
    # FPDFText_GetUnicode is per char index, so text and boxes stay aligned (get_text_range is UCS-2 only).
    # pdfium's own line breaks are not enough: it runs wrapped lines together (with U+FFFE where it
    # took a hyphen away), so a line also ends where the next glyph leaves its row.
    lines: list[TextLine] = []
    current: list[Char] = []
    last: Optional[Char] = None  # the current line's last visible glyph
    band: list[float] = [0.0, 0.0]  # bottom and top of the current line's visible glyphs so far
    for char in chars:
        if char is not None and not char.level:
            continue
        if char is None or last is not None and not char.text.isspace() and _leaves_row(last, band, char):
            _close_line(current, lines)
            current, last = [], None
        if char is None:
            continue
        current.append(char)
        if not char.text.isspace():
            low, high = char.box[1], char.box[3]
            band = [min(band[0], low), max(band[1], high)] if last is not None else [low, high]
            last = char
    _close_line(current, lines)
    return lines


def _turned_runs(chars: Sequence[Optional[Char]]) -> list[TextLine]:
    """Each unbroken run of turned glyphs, in pdfium's order (which is how the run reads), as one line."""
    lines: list[TextLine] = []
    run: list[Char] = []
    for char in [*chars, None]:
        if char is not None and (not char.level or run and char.text.isspace()):
            run.append(char)  # (the spaces pdfium puts between its words may be level)
            continue
        if run:
            _close_line(run, lines)
            run = []
    for line in lines:
        line.turned = True
    return lines


def _page_chars(textpage: pdfium.PdfTextPage) -> Iterator[Optional[Char]]:
    """The page's chars (None at a line break): surrogate pairs combined, math letters and ligatures
    folded (NFKC: 𝜎 reads as σ), control chars dropped unless they are drawn as a hyphen, glyphs without
    a Unicode map read by ``_unmapped``."""
    handle = textpage.raw
    count = textpage.count_chars()
    index = 0
    edges = [ctypes.c_double() for _ in range(4)]  # one set reused: ~0.5M glyphs in a long paper
    refs = [ctypes.byref(edge) for edge in edges]
    while index < count:
        code = pdfium_c.FPDFText_GetUnicode(handle, index)
        if not pdfium_c.FPDFText_GetCharBox(handle, index, *refs):  # left, right, bottom, top
            raise pdfium.PdfiumError("Failed to get charbox.")
        box = (edges[0].value, edges[2].value, edges[1].value, edges[3].value)
        size = pdfium_c.FPDFText_GetFontSize(handle, index)
        level = _is_level(pdfium_c.FPDFText_GetCharAngle(handle, index))
        index += 1
        if 0xD800 <= code < 0xDC00:
            low = pdfium_c.FPDFText_GetUnicode(handle, index) if index < count else 0
            if not 0xDC00 <= low < 0xE000:
                continue  # a lone surrogate is no text
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
            index += 1
        elif 0xDC00 <= code < 0xE000:
            continue
        elif code < 0x80 and pdfium_c.FPDFText_HasUnicodeMapError(handle, index - 1) == 1:
            yield from _unmapped(code, _font_name(handle, index - 1), box, size, level)
            continue
        if code == 0x0A:
            yield None
        elif code == 0xFFFE or 0 < code < 0x20 and _hyphen_shaped(box, size):
            yield Char("-", box, size, level)  # a hyphen glyph without a Unicode mapping, or pdfium's U+FFFE
        elif code in DELIMITER_CODES and (piece := delimiter_piece(code)) is not None:
            if piece:  # a tall delimiter's top piece reads as it, its other pieces as nothing
                yield Char(piece, box, size, level)
        elif code >= 0x20 and code != 0xFFFF:
            yield Char(fold_char(chr(code)), box, size, level)


def _unmapped(code: int, font: str, box: BBox, size: float, level: bool) -> Iterator[Char]:
    """A glyph pdfium has no Unicode for: TeX's math fonts by their code tables; a control code (no text
    holds one) as UNREADABLE unless it is drawn as a hyphen; else the char of its code."""
    shown = shown_char(font, code)
    if shown is not None:
        if shown:
            yield Char(shown, box, size, level)
    elif code < 0x20:
        hyphen = _hyphen_shaped(box, size)
        yield Char("-" if hyphen else UNREADABLE, box, size, level, "" if hyphen else font)
    else:
        yield Char(fold_char(chr(code)), box, size, level, font)


def _negated(chars: list[Optional[Char]]) -> list[Optional[Char]]:
    """TeX's negation slash joined to the symbol it crosses: "=" reads "≠". TeX draws the slash before the
    symbol ("\\not="), a hand-built "≠" may draw it after: the glyph before is taken when the slash is on it."""
    slashes = [(i, char) for i, char in enumerate(chars) if char is not None and char.text == NEGATION]
    if not slashes:
        return chars  # (pages without TeX's unmapped slash: nearly all)
    for i, slash in slashes:
        before = chars[i - 1] if i else None
        if before is not None and before.text != NEGATION and _overlap(before.box, slash.box) and _crossed(before):
            continue
        after = chars[i + 1] if i + 1 < len(chars) else None
        if after is not None and after.text != NEGATION:
            _crossed(after)
    return [char for char in chars if char is None or char.text != NEGATION]


def _overlap(a: BBox, b: BBox) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > 0.3 * min(a[2] - a[0], b[2] - b[0])


def _crossed(char: Char) -> bool:
    """The glyph with the slash through it, where Unicode has that symbol (=, ∈, ⊂, <, ≡ …)."""
    crossed = unicodedata.normalize("NFC", char.text + NEGATION)
    if len(crossed) != 1:
        return False
    char.text = crossed
    return True


def _is_level(angle: float) -> bool:
    """A glyph's angle (radians, counterclockwise; -1 when pdfium cannot tell) is within 6 degrees of level."""
    return angle < 0 or min(angle, 2 * math.pi - angle) < LEVEL_RADIANS


def _font_name(handle, index: int) -> str:
    buffer = ctypes.create_string_buffer(96)
    flags = ctypes.c_int(0)
    pdfium_c.FPDFText_GetFontInfo(handle, index, buffer, 96, ctypes.byref(flags))
    return buffer.value.decode("latin-1", "replace").split("+")[-1]


def _hyphen_shaped(box: BBox, size: float) -> bool:
    """An unmapped glyph (a control code) drawn as a short flat bar: the hyphen of a broken word."""
    width, height = box[2] - box[0], box[3] - box[1]
    return 0 < height < 0.15 * max(size, 1.0) and height < 0.5 * width < size


def fold_char(ch: str) -> str:
    """Mathematical alphanumerics and Latin ligatures as the plain letters they show (NFKC), nothing else:
    full-width CJK punctuation keeps its form."""
    code = ord(ch)
    if 0x1D400 <= code <= 0x1D7FF or 0xFB00 <= code <= 0xFB06:
        return unicodedata.normalize("NFKC", ch)
    return ch


def _leaves_row(last: Char, band: Sequence[float], char: Char) -> bool:
    """The glyph starts a new line: outside the line's vertical band, or a jump back to the left of the
    line's last visible glyph. (Wide gaps do not split: justified narrow columns have word gaps of 3 ems
    and more.)"""
    size = max(1.0, last.size, char.size)
    overlap = min(band[1], char.box[3]) - max(band[0], char.box[1])
    if overlap <= 0 and not (
        char.box[0] >= last.box[0]
        and char.box[0] - last.box[2] < 0.3 * size
        and abs(char.box[1] - last.box[1]) < 0.7 * size
    ):
        return True  # (a sub- or superscript right after its base stays on the line)
    return char.box[0] < last.box[0] - 2.0 * size


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


def order_lines(lines: Sequence[TextLine], obstacles: Sequence[BBox] = ()) -> list[TextLine]:
    """Reading order (recursive XY-cut, see reading_order); inside each piece rows top to bottom, and
    pieces of one row merged when they are close together. ``column`` is set on every line. Turned lines
    come last, as they are: a tall narrow box in the margin joined rows it crossed, beside and out of order.
    Footnotes come after the text (see footnotes), before the turned lines."""
    ordered: list[TextLine] = []
    for leaf in reading_leaves([line for line in lines if not line.turned], obstacles):
        for line in _rows_merged(leaf.lines):
            line.column = leaf.column
            ordered.append(line)
    return footnotes_last(ordered + [line for line in lines if line.turned])


def _rows_merged(lines: Sequence[TextLine]) -> list[TextLine]:
    ordered: list[TextLine] = []
    for row in _rows(sorted(lines, key=lambda ln: -(ln.y0 + ln.y1) / 2)):
        row = _stacks_joined(sorted(row, key=lambda ln: ln.x0))
        merged = [row[0]]
        for piece in row[1:]:
            last = merged[-1]
            if not last.block and not piece.block and piece.x0 - last.x1 < 2.0 * max(last.size, piece.size, 1.0):
                merged[-1] = _merge(last, piece)
            else:
                merged.append(piece)
        ordered.extend(merged)
    return ordered


def _stacks_joined(row: list[TextLine]) -> list[TextLine]:
    """Short pieces of a row stacked above each other (a fraction's numerator and denominator, a sum's
    limits) become one piece read top to bottom, a fraction as "a/b"."""
    out: list[TextLine] = []
    for piece in row:
        last = out[-1] if out else None
        if last is not None and _stacked(last, piece):
            top, bottom = (last, piece) if last.y1 >= piece.y1 else (piece, last)
            out[-1] = TextLine(
                _stack_text(top.text, bottom.text),
                union([top.box, bottom.box]),
                max(top.size, bottom.size),
                top.chars + bottom.chars,
            )
        else:
            out.append(piece)
    return out


def _stack_text(top: str, bottom: str) -> str:
    """An operator's limits as LaTeX writes them ("min_{f∈F}", "∑_{i=1}^{n}": read as "min/f∈F" they were a
    fraction), a fraction as "a/b"."""
    if _ENDS_IN_OPERATOR.search(top.strip()):
        return f"{top.strip()}_{{{bottom.strip()}}}"
    if _OPERATOR_WITH_LIMIT.match(bottom.strip()):
        return f"{bottom.strip()}^{{{top.strip()}}}"
    return top + ("/" if len(top) <= _STACK_MAX and len(bottom) <= _STACK_MAX else " ") + bottom


def _stacked(a: TextLine, b: TextLine) -> bool:
    if a.block or b.block or len(a.text) > _STACK_MAX or len(b.text) > _STACK_MAX:
        return False
    x_overlap = min(a.x1, b.x1) - max(a.x0, b.x0)
    y_overlap = min(a.y1, b.y1) - max(a.y0, b.y0)
    return x_overlap > 0.5 * min(a.x1 - a.x0, b.x1 - b.x0) and y_overlap < 0.3 * min(a.height, b.height)


def _rows(lines: Iterable[TextLine]) -> list[list[TextLine]]:
    rows: list[list[TextLine]] = []
    top = bottom = 0.0  # of the last row, kept as it grows (recomputing them was quadratic in its lines)
    for line in lines:
        if rows and not line.block and not rows[-1][0].block:
            overlap = min(top, line.y1) - max(bottom, line.y0)
            if overlap > 0.5 * min(line.height, top - bottom):
                rows[-1].append(line)
                top, bottom = max(top, line.y1), min(bottom, line.y0)
                continue
        rows.append([line])
        top, bottom = line.y1, line.y0
    return rows


def _merge(left: TextLine, right: TextLine) -> TextLine:
    gap = right.x0 - left.x1
    needs_space = gap > 0.25 * max(left.size, 1.0) and not (
        CJK_CHAR.match(left.text[-1]) and CJK_CHAR.match(right.text[0])
    )
    text = left.text + (" " if needs_space else "") + right.text
    return TextLine(text, union([left.box, right.box]), max(left.size, right.size), left.chars + right.chars)
