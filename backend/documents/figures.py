"""Figures of a page: embedded images and charts drawn as vector paths, rendered to PNG with a caption.

Vector charts have no image object. A chart is taken to be a compact cluster of paths that holds at
least two solid shapes (bars, areas, slices) or a long polyline with no text inside them; glyphs of
formulas drawn as paths are too small to count and table cells hold text, so neither is taken.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import pypdfium2 as pdfium
from PIL import Image

from backend.documents.figure_mentions import figure_mentions, lines_above, lines_below, nearest_title
from backend.documents.figure_objects import page_objects
from backend.documents.figure_regions import (
    CAPTION,
    above_caption,
    caption_lines,
    holds_the_text,
    is_blank,
    is_body_text,
    is_sentence_beside,
    joined_parts,
    text_size,
)
from backend.documents.layout import BBox, Char, TextLine, center_inside, union
from backend.stage_times import stage

log = logging.getLogger(__name__)

_CLUSTER_GAP = 10.0
_MIN_MARKERS = 5  # data points of one size that count as one chart shape
_MIN_DRAWING_HEIGHT = 24.0  # points: lower clusters are rules and underlines  # points between paths of one chart
_MAX_PATHS = 1500  # beyond this a page is a drawing or a map: clustering would be slow and meaningless
_MIN_IMAGE_PX = 8  # smaller images are rules, bullets and dots; a figure of small tiles is joined first
_CAPTION_BELOW = 60.0
_CAPTION_ABOVE = 40.0
_TITLE_MAX_CHARS = 40
_FIGURE_WORDS = re.compile(
    r"示意图|图表|曲线|趋势图|分布图|流程图|结构图|框图|\b(?:chart|diagram|plot|graph|figure)\b", re.IGNORECASE
)


@dataclass
class PageFigure:
    """A figure found on a page; ``index`` is 1-based in reading order on that page."""

    page: int
    index: int
    box: BBox  # PDF points, origin bottom left
    kind: str  # "image", "drawing" (an included form), "vector" or "words" (a plot drawn with words: word_plots)
    image: Image.Image
    caption: str = ""
    text: str = ""  # the words drawn in it, when they were taken out of the body text
    context: str = ""  # sentences next to it that refer to it (figure_mentions)

    @property
    def file_name(self) -> str:
        return f"p{self.page}_fig{self.index}.png"


@stage("figures")
def save_figure(figure: PageFigure, directory: Path | str) -> Path:
    """Write the figure as ``p{page}_fig{n}.png`` into ``directory`` and return its path."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / figure.file_name
    figure.image.save(path, format="PNG")
    return path


def image_boxes(page: pdfium.PdfPage) -> list[tuple[BBox, tuple[int, int]]]:
    """Visible page-space bounds and pixel size of the page's image objects, nested ones included."""
    return page_objects(page).images


@stage("figures")
def find_figures(
    page: pdfium.PdfPage,
    page_no: int,
    lines: Sequence[TextLine],
    images: Sequence[tuple[BBox, tuple[int, int]]],
    paths: Sequence[tuple[BBox, int]],
    excluded: Sequence[BBox],
    min_px: int,
    dpi: int,
    vector_charts: bool,
    max_image_share: float = 0.8,
    word_plots: Sequence[tuple[BBox, str]] = (),
    drawings: Sequence[BBox] = (),
) -> list[PageFigure]:
    """Images, included drawings (``drawings``: top-level forms that draw, figure_objects), plots drawn
    with words (``word_plots``: box and text) and (optionally) vector charts; the parts of one figure
    joined, page-covering images, ``excluded`` areas, crops of body text and blank crops left out."""
    plots = [(_padded(b, *page.get_size()), "words", text) for b, text in word_plots]
    boxes = _candidate_boxes(page, lines, images, paths, excluded, vector_charts, max_image_share, drawings)
    # a plot of words keeps its axes: they are no figure of their own
    boxes = [item for item in boxes if not any(center_inside(item[0], p, pad=_CLUSTER_GAP) for p, _, _ in plots)]
    boxes += plots
    visible = page_box(page)
    # the body's size is read outside the candidates (a slide's small text is not the body's); a form holding
    # the whole text leaves nothing outside
    size = text_size([ln for ln in lines if not any(center_inside(ln.box, b) for b, _, _ in boxes)]) or text_size(lines)
    boxes = [
        (clamped, kind, text)
        for b, kind, text in boxes
        if (clamped := clamp_box(b, visible)) is not None
        and _big_enough(clamped, min_px, dpi)
        and (kind == "words" or not (is_body_text(clamped, lines, size) or holds_the_text(clamped, lines, size)))
    ]
    boxes.sort(key=lambda item: (-item[0][3], item[0][0]))
    figures: list[PageFigure] = []
    used_captions: set[int] = set()
    for box, kind, text in boxes:
        try:
            image = render_region(page, box, dpi)
        except (ValueError, pdfium.PdfiumError) as exc:  # one bad figure must not cost the document
            log.warning("page %d: figure at %s skipped (%s)", page_no, [round(v) for v in box], exc)
            continue
        if kind != "words" and is_blank(image):
            continue
        above, below = [ln.text for ln in lines_above(box, lines)], [ln.text for ln in lines_below(box, lines)]
        caption = _caption_for(box, lines, used_captions) or nearest_title(above, below)
        context = figure_mentions(above, below, caption)
        figures.append(PageFigure(page_no, len(figures) + 1, box, kind, image, caption, text, context))
    return figures


def _candidate_boxes(
    page: pdfium.PdfPage,
    lines: Sequence[TextLine],
    images: Sequence[tuple[BBox, tuple[int, int]]],
    paths: Sequence[tuple[BBox, int]],
    excluded: Sequence[BBox],
    vector_charts: bool,
    max_share: float,
    drawings: Sequence[BBox],
) -> list[tuple[BBox, str, str]]:
    """Images, drawings and vector charts, the parts of one figure joined (figure_regions); a joined box
    takes the kind of its largest part."""
    width, height = page.get_size()
    page_area = width * height
    parts = [(b, "image") for b in _image_regions(images, page_area, max_share)]
    parts += [(b, "drawing") for b in drawings if _area(b) <= max_share * page_area]
    parts = [(b, kind) for b, kind in parts if not any(center_inside(b, t) for t in excluded)]
    if vector_charts:
        chars = [c for ln in lines for c in ln.chars]
        taken = [b for b, _ in parts] + list(excluded)
        parts += [(b, "vector") for b in _vector_chart_regions(paths, chars, lines, taken, width, height)]
    joined = []
    for box in (above_caption(b, lines) for b in joined_parts([b for b, _ in parts], lines)):
        inside = [(b, kind) for b, kind in parts if center_inside(b, box, pad=1.0)]
        kind = max(inside, key=lambda part: _area(part[0]))[1] if inside else "vector"
        joined.append((box, kind, ""))
    return joined


def _area(box: BBox) -> float:
    return (box[2] - box[0]) * (box[3] - box[1])


def _padded(box: BBox, width: float, height: float, margin: float = 4.0) -> BBox:
    return (
        max(0.0, box[0] - margin),
        max(0.0, box[1] - margin),
        min(width, box[2] + margin),
        min(height, box[3] + margin),
    )


def introduced_on_previous_page(figures: Sequence[PageFigure], lines: Sequence[TextLine], tail: Sequence[str]) -> None:
    """A figure with no text above it on its page takes its caption-like line and the sentences about it
    from the previous page's last lines (``tail``), where such a figure is introduced."""
    for figure in figures:
        if not tail or lines_above(figure.box, lines):
            continue
        figure.caption = figure.caption or nearest_title(tail, [])
        figure.context = " ".join(filter(None, [figure_mentions(tail, [], figure.caption), figure.context]))


def page_box(page: pdfium.PdfPage) -> BBox:
    """The visible part of the page in PDF user space: the CropBox (within the MediaBox), which need not
    start at 0, 0."""
    media = page.get_mediabox()
    crop = page.get_cropbox()
    box = (max(media[0], crop[0]), max(media[1], crop[1]), min(media[2], crop[2]), min(media[3], crop[3]))
    return box if box[2] > box[0] and box[3] > box[1] else tuple(media)


def clamp_box(box: BBox, visible: BBox) -> Optional[BBox]:
    """``box`` cut to the visible page; None when nothing of it is on the page."""
    clamped = (max(box[0], visible[0]), max(box[1], visible[1]), min(box[2], visible[2]), min(box[3], visible[3]))
    if clamped[2] - clamped[0] < 1.0 or clamped[3] - clamped[1] < 1.0:
        return None
    return clamped


def _image_regions(images: Sequence[tuple[BBox, tuple[int, int]]], page_area: float, max_share: float) -> list[BBox]:
    boxes = [b for b, px in images if _area(b) <= max_share * page_area and (px == (0, 0) or min(px) >= _MIN_IMAGE_PX)]
    return merge_boxes(boxes, gap=2.0)  # images cut into strips or tiles form one figure


def _big_enough(box: BBox, min_px: int, dpi: int) -> bool:
    scale = dpi / 72.0
    return min(box[2] - box[0], box[3] - box[1]) * scale >= min_px


def merge_boxes(boxes: Sequence[BBox], gap: float) -> list[BBox]:
    """Union boxes that overlap or lie within ``gap`` of each other, until none do."""
    merged = list(boxes)
    changed = True
    while changed:
        changed = False
        out: list[BBox] = []
        for box in merged:
            for i, other in enumerate(out):
                if _near(box, other, gap):
                    out[i] = union([box, other])
                    changed = True
                    break
            else:
                out.append(box)
        merged = out
    return merged


def _near(a: BBox, b: BBox, gap: float) -> bool:
    return a[0] - gap <= b[2] and b[0] - gap <= a[2] and a[1] - gap <= b[3] and b[1] - gap <= a[3]


def _vector_chart_regions(
    paths: Sequence[tuple[BBox, int]],
    chars: Sequence[Char],
    lines: Sequence[TextLine],
    taken: Sequence[BBox],
    width: float,
    height: float,
) -> list[BBox]:
    candidates = [
        (b, n)
        for b, n in paths
        if (b[2] - b[0]) < 0.9 * width
        and (b[2] - b[0]) * (b[3] - b[1]) < 0.5 * width * height
        and not any(center_inside(b, t, pad=2.0) for t in taken)
    ]
    if len(candidates) > _MAX_PATHS:
        log.debug("%d vector paths on a page: vector chart detection skipped", len(candidates))
        return []
    regions = []
    for cluster in _clusters(candidates):
        box = union(b for b, _ in cluster)
        if box[2] - box[0] < 100 or box[3] - box[1] < _MIN_DRAWING_HEIGHT:
            continue
        shapes = sum(1 for b, n in cluster if _is_chart_shape(b, n, chars)) + min(1, _markers(cluster) // _MIN_MARKERS)
        boxed_text = sum(1 for b, n in cluster if n <= 6 and _holds_text(b, chars))
        chart = shapes >= 2 and boxed_text < 2 and box[3] - box[1] >= 60
        if chart or caption_lines(box, lines):  # a drawing with a figure caption is a figure, framed text too
            regions.append(_with_labels(box, lines, width, height))
    return regions


def _clusters(paths: Sequence[tuple[BBox, int]]) -> list[list[tuple[BBox, int]]]:
    groups: list[tuple[BBox, list[tuple[BBox, int]]]] = []
    for path in sorted(paths, key=lambda p: (-p[0][3], p[0][0])):
        hits = [g for g in groups if _near(g[0], path[0], _CLUSTER_GAP)]
        members = [path] + [m for g in hits for m in g[1]]
        groups = [g for g in groups if not any(g is h for h in hits)]
        groups.append((union(b for b, _ in members), members))
    # a cluster's growth can reach a group formed earlier: merge until stable
    merged = True
    while merged:
        merged = False
        for i in range(len(groups)):
            for j in range(i + 1, len(groups)):
                if _near(groups[i][0], groups[j][0], _CLUSTER_GAP):
                    members = groups[i][1] + groups[j][1]
                    groups[i] = (union(b for b, _ in members), members)
                    del groups[j]
                    merged = True
                    break
            if merged:
                break
    return [g[1] for g in groups]


def _markers(cluster: Sequence[tuple[BBox, int]]) -> int:
    """Small marks of one size (the data points of a line or scatter plot): the most common size's count."""
    sizes: dict[tuple[int, int], int] = {}
    for b, _ in cluster:
        w, h = b[2] - b[0], b[3] - b[1]
        if 2.0 <= w <= 8.0 and 2.0 <= h <= 8.0:
            key = (round(w), round(h))
            sizes[key] = sizes.get(key, 0) + 1
    return max(sizes.values(), default=0)


def _is_chart_shape(box: BBox, segments: int, chars: Sequence[Char]) -> bool:
    """A bar, area or slice (solid and sizeable), or a data polyline; never a box holding text."""
    w, h = box[2] - box[0], box[3] - box[1]
    solid = min(w, h) >= 8 and w * h >= 300
    polyline = segments >= 6 and w >= 40 and h >= 20
    if not (solid or polyline):
        return False
    return not _holds_text(box, chars)


def _holds_text(box: BBox, chars: Sequence[Char]) -> bool:
    """Table cells and text frames hold text; chart bars and areas do not."""
    if min(box[2] - box[0], box[3] - box[1]) < 8:
        return False
    return any(center_inside(c.box, box) for c in chars if not c.text.isspace())


def _with_labels(box: BBox, lines: Sequence[TextLine], width: float, height: float) -> BBox:
    """Grow the chart box over the short text lines around it: axis labels, legend, title."""
    pad = 20.0
    zone = (box[0] - pad, box[1] - pad, box[2] + pad, box[3] + pad)
    labels = [
        ln.box
        for ln in lines
        if not ln.block
        and _near(ln.box, zone, 0.0)
        and ln.x1 - ln.x0 <= box[2] - box[0]
        and not CAPTION.match(ln.text)
        and not is_sentence_beside(ln, box)
    ]
    return _padded(union([box] + labels), width, height)


def _caption_for(box: BBox, lines: Sequence[TextLine], used: set[int]) -> str:
    """The nearest 'Figure n' / '图n' line just below the figure, else just above it; failing that, a short
    title line next to it that names a figure ("4. 波函数示意图", "Revenue chart")."""
    return _nearest_line(box, lines, used, lambda text: bool(CAPTION.match(text))) or _nearest_line(
        box, lines, used, _looks_like_figure_title
    )


def _looks_like_figure_title(text: str) -> bool:
    return len(text.strip()) <= _TITLE_MAX_CHARS and bool(_FIGURE_WORDS.search(text))


def _nearest_line(box: BBox, lines: Sequence[TextLine], used: set[int], accept) -> str:
    best: Optional[tuple[float, int]] = None
    for i, line in enumerate(lines):
        if i in used or line.block or not accept(line.text):
            continue
        if line.x1 < box[0] or line.x0 > box[2]:
            continue
        below = box[1] - line.y1
        above = line.y0 - box[3]
        if -2.0 <= below <= _CAPTION_BELOW:
            distance = below
        elif -2.0 <= above <= _CAPTION_ABOVE:
            distance = above + 0.5  # prefer below on a tie: captions usually sit under figures
        else:
            continue
        if best is None or distance < best[0]:
            best = (distance, i)
    if best is None:
        return ""
    used.add(best[1])
    return lines[best[1]].text


def render_region(page: pdfium.PdfPage, box: BBox, dpi: int) -> Image.Image:
    """Render just ``box`` (PDF user space) of the page, so overlays, masks and rotation come out as printed.
    The box is cut to the visible page first; ValueError when nothing of it is visible."""
    visible = page_box(page)
    clamped = clamp_box(box, visible)
    if clamped is None:
        raise ValueError(f"the box {[round(v, 1) for v in box]} is outside the page")
    margins = (clamped[0] - visible[0], clamped[1] - visible[1], visible[2] - clamped[2], visible[3] - clamped[3])
    bitmap = page.render(scale=dpi / 72.0, crop=_rotated(margins, page.get_rotation()))
    try:
        return bitmap.to_pil().convert("RGB")
    finally:
        bitmap.close()


def _rotated(margins: tuple[float, float, float, float], rotation: int) -> tuple[float, float, float, float]:
    """Crop margins (left, bottom, right, top) of the unrotated page as pypdfium2 wants them: after /Rotate
    (clockwise)."""
    left, bottom, right, top = margins
    return {90: (bottom, right, top, left), 180: (right, top, left, bottom), 270: (top, left, bottom, right)}.get(
        rotation % 360, margins
    )
