"""Which boxes of a page are figures: the parts of one figure joined, body text and blank crops refused.

Parts of one figure (the panels of a row, the slides stacked in a column, an image with the drawing
around it) are joined when nothing but short labels lies between them; a caption or a sentence between
two boxes keeps them apart, so a figure never runs into the next one or over the body text of the other
column. A box that is mostly lines of body text at the body's size is text, and a render with almost no
ink is a blank sliver: neither is a figure.
"""

from __future__ import annotations

import re
from typing import Sequence

from PIL import Image

from backend.documents.layout import BBox, TextLine, center_inside, union

JOIN_GAP = 30.0  # points between parts of one figure (panels side by side, stacked slides)
CAPTION_REACH = 60.0  # points between a figure and its caption
_SENTENCE_CHARS = 30  # a line this long is a sentence or a caption, never a label between two panels
_TEXT_SHARE = 0.4  # body-size lines covering this much of a box make it text
_BODY_SIZE_MARGIN = 0.15  # a line within this share of the body size is set at the body's size
_PAGE_TEXT_CHARS = 80  # body text a figure never holds this much of (and the share below) ...
_PAGE_TEXT_SHARE = 0.5  # ... of the page's body text
_INK_SHARE = 0.004  # renders with less ink than this are blank
_WHITE = 245  # grey level from which a pixel is paper

_FIGURE_NUMBER = r"图\s*\d+|图\s*[\d一二三四五六七八九十]+[-.．]\d+|Figure\s*\d+|Fig\.?\s*\d+"
FIGURE_CAPTION = re.compile(rf"^\s*(?:{_FIGURE_NUMBER})", re.IGNORECASE)  # a figure's own caption
CAPTION = re.compile(rf"^\s*(?:{_FIGURE_NUMBER}|表\s*\d+)", re.IGNORECASE)  # what a figure's caption may be
_CAPTION_START = re.compile(rf"^\s*(?:{_FIGURE_NUMBER}|表\s*\d+|Table\s*\d+)", re.IGNORECASE)  # any caption


def joined_parts(boxes: Sequence[BBox], lines: Sequence[TextLine]) -> list[BBox]:
    """Boxes close together with nothing but short labels between them become one, until none do."""
    merged = list(boxes)
    changed = True
    while changed:
        changed = False
        for i in range(len(merged)):
            for j in range(i + 1, len(merged)):
                if _parts_of_one(merged[i], merged[j], lines):
                    merged[i] = union([merged[i], merged[j]])
                    del merged[j]
                    changed = True
                    break
            if changed:
                break
    return merged


def _parts_of_one(a: BBox, b: BBox, lines: Sequence[TextLine]) -> bool:
    """Close together, nothing but labels between them, and not two figures side by side that each have
    a caption of their own under (or over) them."""
    if _gap(a, b) > JOIN_GAP or _text_between(a, b, lines):
        return False
    return not (_own_caption(a, b, lines) and _own_caption(b, a, lines))


def _own_caption(box: BBox, other: BBox, lines: Sequence[TextLine]) -> bool:
    """A caption line within ``CAPTION_REACH`` below or above ``box`` that does not reach under ``other``."""
    return any(line.x1 <= other[0] or line.x0 >= other[2] for line in caption_lines(box, lines, _CAPTION_START))


def caption_lines(box: BBox, lines: Sequence[TextLine], pattern: re.Pattern = FIGURE_CAPTION) -> list[TextLine]:
    """Lines matching ``pattern`` under (or over) ``box`` within ``CAPTION_REACH`` of it, and mostly within its
    width or it within theirs (a column-wide caption under a narrow drawing)."""
    found = []
    for line in lines:
        if line.block or not pattern.match(line.text):
            continue
        near = -2.0 <= box[1] - line.y1 <= CAPTION_REACH or -2.0 <= line.y0 - box[3] <= CAPTION_REACH
        overlap = min(line.x1, box[2]) - max(line.x0, box[0])
        if near and overlap > 0.5 * min(line.x1 - line.x0, box[2] - box[0]):
            found.append(line)
    return found


def above_caption(box: BBox, lines: Sequence[TextLine]) -> BBox:
    """``box`` without the figure caption at its bottom: an included drawing's page may reach over it."""
    middle = (box[1] + box[3]) / 2
    tops = [ln.y1 for ln in lines if not ln.block and FIGURE_CAPTION.match(ln.text) and center_inside(ln.box, box)]
    tops = [top for top in tops if top < middle]
    return (box[0], max(tops) + 1.0, box[2], box[3]) if tops else box


def is_sentence_beside(line: TextLine, box: BBox) -> bool:
    """A long line that starts or ends outside ``box``: the column's text next to a figure, not its label."""
    return len(line.text) >= _SENTENCE_CHARS and (line.x0 < box[0] - 2.0 or line.x1 > box[2] + 2.0)


def _gap(a: BBox, b: BBox) -> float:
    return max(a[0] - b[2], b[0] - a[2], a[1] - b[3], b[1] - a[3], 0.0)


def _text_between(a: BBox, b: BBox, lines: Sequence[TextLine]) -> bool:
    """A sentence or a caption in the union of ``a`` and ``b`` outside both of them."""
    whole = union([a, b])
    for line in lines:
        if line.block or not _overlaps(line.box, whole):
            continue
        # only the line's part outside both: a row of tick labels may run on into the next column's text
        outside = "".join(
            c.text
            for c in line.chars
            if center_inside(c.box, whole) and not (center_inside(c.box, a) or center_inside(c.box, b))
        )
        outside = " ".join(outside.split())
        if len(outside) >= _SENTENCE_CHARS or _CAPTION_START.match(outside):
            return True
    return False


def _overlaps(a: BBox, b: BBox) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > 0 and min(a[3], b[3]) - max(a[1], b[1]) > 0


def text_size(lines: Sequence[TextLine]) -> float:
    """The font size most characters of the page are set in (0 without text)."""
    weights: dict[float, int] = {}
    for line in lines:
        if not line.block:
            size = round(line.size * 2) / 2
            weights[size] = weights.get(size, 0) + len(line.text)
    return max(weights, key=lambda s: weights[s]) if weights else 0.0


def is_body_text(box: BBox, lines: Sequence[TextLine], size: float) -> bool:
    """Most of ``box`` is lines set at the body's size: a crop of the page's text, not a figure."""
    area = max(1.0, (box[2] - box[0]) * (box[3] - box[1]))
    if not size:
        return False
    covered = 0.0
    for line in lines:
        if line.block or abs(line.size - size) > _BODY_SIZE_MARGIN * size or not center_inside(line.box, box):
            continue
        width = min(line.x1, box[2]) - max(line.x0, box[0])
        covered += max(0.0, width) * line.height
    return covered >= _TEXT_SHARE * area


def holds_the_text(box: BBox, lines: Sequence[TextLine], size: float) -> bool:
    """Most of the page's text at the body's size is inside ``box``: a page drawn as one form (an imported
    or scaled page), not a figure on it."""
    body = [ln for ln in lines if not ln.block and size and abs(ln.size - size) <= _BODY_SIZE_MARGIN * size]
    total = sum(len(ln.text) for ln in body)
    inside = sum(len(ln.text) for ln in body if center_inside(ln.box, box))
    return inside >= _PAGE_TEXT_CHARS and inside >= _PAGE_TEXT_SHARE * total


def is_blank(image: Image.Image) -> bool:
    """Almost no pixel darker than paper: a blank sliver (a clipped-away object, white background)."""
    grey = image.convert("L")
    histogram = grey.histogram()
    ink = sum(histogram[:_WHITE])
    return ink < _INK_SHARE * max(1, grey.width * grey.height)
