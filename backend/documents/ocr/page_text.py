"""A page's OCR lines as text: rows and paragraphs in reading order (columns, figures' labels as blocks,
headers and footers dropped), display equations handed to a ``mark`` (OCR garbles formulas)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from PIL import Image

from backend.documents.equations import body_line_height, is_equation_text, is_fraction_display
from backend.documents.layout import TextLine, order_lines
from backend.stage_times import stage
from backend.text import join_words

_OCR_SIZE_SHARE = 0.8  # font size over the height of a recognised line's box


@dataclass
class OCRBox:
    """One recognised text line with its box in image pixels."""

    text: str
    x0: float
    y0: float  # top
    x1: float
    y1: float  # bottom

    @property
    def height(self) -> float:
        return max(1.0, self.y1 - self.y0)


# A paragraph that reads as a display equation, with its box in image pixels -> what stands for it.
MarkFormula = Callable[[str, tuple[float, float, float, float]], str]


@stage("layout")
def page_text(
    boxes: Sequence[OCRBox], image: Image.Image, use_layout_model: bool = True, mark: Optional[MarkFormula] = None
) -> str:
    """The page's text from its OCR boxes; when they form columns (geometry alone is unsure on a scan:
    no image objects mark the figures) the layout model's regions join in. ``mark``: each display
    equation's paragraph is replaced by what it returns (OCR garbles formulas)."""
    if use_layout_model and boxes and _has_columns(boxes):
        from backend.documents.layout_model import layout_model

        return boxes_to_text(boxes, layout_model().regions(image), image.height, mark)
    return boxes_to_text(boxes, mark=mark)


def _has_columns(boxes: Sequence[OCRBox]) -> bool:
    return any(line.column for line in order_lines(_text_lines(boxes)))


def _text_lines(boxes: Sequence[OCRBox]) -> list[TextLine]:
    # y flipped: the ordering works in PDF orientation
    return [
        TextLine(b.text.strip(), (b.x0, -b.y1, b.x1, -b.y0), _OCR_SIZE_SHARE * b.height)
        for b in boxes
        if b.text.strip()
    ]


def boxes_to_text(
    boxes: Sequence[OCRBox], regions: Sequence = (), page_height: float = 0.0, mark: Optional[MarkFormula] = None
) -> str:
    """Boxes in reading order (the same XY-cut as native pages: columns, full-width blocks), one line per
    row, a blank line where a paragraph, a block or a column starts. Layout-model ``regions`` (image
    pixels): figures take part in the cut, headers and footers are dropped, an equation's lines stay
    together. ``mark``: see ``page_text``."""
    from backend.documents.layout_model import margin_regions

    margins = [r.box for r in margin_regions(list(regions), page_height)] if regions else []
    lines = [ln for ln in _text_lines(boxes) if not any(_inside(ln, _flip(m)) for m in margins)]
    if not lines:
        return ""
    figures = [_flip(r.box) for r in regions if r.label == "figure"]
    equations = [_flip(r.box) for r in regions if r.label == "equation"]
    lines = _figure_text_as_blocks(lines, figures)
    heights = sorted(ln.height for ln in lines)
    typical = heights[len(heights) // 2]
    out: list[str] = []
    rows: list[list[TextLine]] = []  # the lines of each entry of ``out`` ([] for a paragraph break)
    previous: Optional[TextLine] = None
    for line in order_lines(lines, figures):
        line.equation = any(_inside(line, e) for e in equations)
        if (
            previous is not None
            and not (previous.block or line.block)
            and (previous.column == line.column and _one_row(previous, line) or previous.equation and line.equation)
        ):
            out[-1] = join_words(out[-1], line.text)
            rows[-1].append(line)
            previous = line
            continue
        if previous is not None and (
            line.column != previous.column
            or line.y1 > previous.y1
            or previous.y0 - line.y1 > 0.9 * typical
            or previous.equation != line.equation
            or previous.block
            or line.block
        ):
            out.append("")  # a gap taller than a line, the next column, an equation: new paragraph
            rows.append([])
        out.append(line.text)
        rows.append([line])
        previous = line
    return "\n".join(_formulas_marked(out, rows, mark, body_line_height(lines)) if mark else out).strip()


def _formulas_marked(out: list[str], rows: list[list[TextLine]], mark: MarkFormula, line_height: float) -> list[str]:
    """Each paragraph that reads as a display equation (``is_equation_text``) or holds a display fraction
    (``is_fraction_display``) replaced by its mark."""
    marked: list[str] = []
    start = 0
    for end in [i for i, entry in enumerate(out) if entry == "" and not rows[i]] + [len(out)]:
        paragraph, lines = out[start:end], [ln for row in rows[start:end] for ln in row]
        text = " ".join(paragraph)
        if (
            lines
            and not any(ln.block for ln in lines)
            and (is_equation_text(text) or is_fraction_display(text, lines, line_height))
        ):
            paragraph = [mark(" ".join(text.split()), _pixels(lines))]
        marked += paragraph + out[end : end + 1]
        start = end + 1
    return marked


def _pixels(lines: Sequence[TextLine]) -> tuple[float, float, float, float]:
    """The lines' box back in image pixels (left, top, right, bottom): ``_text_lines`` flipped y."""
    return (
        min(ln.x0 for ln in lines),
        -max(ln.y1 for ln in lines),
        max(ln.x1 for ln in lines),
        -min(ln.y0 for ln in lines),
    )


def _figure_text_as_blocks(lines: list[TextLine], figures: Sequence) -> list[TextLine]:
    """The words inside a figure (axis labels, legends) as one block where the figure is: it spans the
    columns like the figure, and its labels stay searchable without cutting into the text."""
    for box in figures:
        inside = [ln for ln in lines if _inside(ln, box)]
        if inside:
            labels = " ".join(ln.text for ln in order_lines(inside))
            lines = [ln for ln in lines if not _inside(ln, box)]
            lines.append(TextLine(labels, tuple(box), max(ln.size for ln in inside), block=True))
    return lines


def _flip(box) -> tuple[float, float, float, float]:
    return (box[0], -box[3], box[2], -box[1])


def _inside(line: TextLine, box) -> bool:
    cx, cy = (line.x0 + line.x1) / 2, (line.y0 + line.y1) / 2
    return box[0] <= cx <= box[2] and box[1] <= cy <= box[3]


def _one_row(a: TextLine, b: TextLine) -> bool:
    overlap = min(a.y1, b.y1) - max(a.y0, b.y0)
    return overlap > 0.5 * min(a.height, b.height) and b.x0 >= a.x1 - 1.0
