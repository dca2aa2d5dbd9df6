"""Where a page's images and included drawings really are, in page space, as far as they are visible.

pdfium gives an object inside a Form XObject its bounds in the form's own space, so an image nested in
a form (a figure included as a PDF, a slide pasted into a paper) was placed somewhere else on the page:
a crop of body text or a blank sliver. Every level's form matrix is applied here, and each object is cut
to its clip path (an included page is often cropped to a small part of it). A top-level form that draws
paths or images (not only text) is a drawing: the usual shape of a figure included by LaTeX.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Optional

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from backend.documents.layout import BBox, union

_MAX_DEPTH = 6  # forms nested deeper are drawn, but not looked into
_MAX_OBJECTS = 60_000  # beyond this a page is a map or a plot of words: its nested objects are not walked


@dataclass
class PageObjects:
    images: list[tuple[BBox, tuple[int, int]]] = field(default_factory=list)  # visible box, pixel size
    drawings: list[BBox] = field(default_factory=list)  # visible boxes of top-level forms that draw


def page_objects(page: pdfium.PdfPage) -> PageObjects:
    """The page's images (any depth) and top-level drawn forms, with visible page-space boxes."""
    found = PageObjects()
    matrices: list[pdfium.PdfMatrix] = []  # the page-space matrix of each open form, by level
    drawn: Optional[list[BBox]] = None  # visible boxes of the current top-level form's paths and images
    for count, obj in enumerate(page.get_objects(max_depth=_MAX_DEPTH)):
        if count >= _MAX_OBJECTS:
            break
        level = obj.level
        del matrices[level:]
        if level == 0 and drawn:
            found.drawings.append(union(drawn))
        if level == 0:
            drawn = [] if obj.type == pdfium_c.FPDF_PAGEOBJ_FORM else None
        if obj.type == pdfium_c.FPDF_PAGEOBJ_FORM:
            own = obj.get_matrix()
            matrices.append(own.multiply(matrices[-1]) if matrices else own)
            continue
        if obj.type not in (pdfium_c.FPDF_PAGEOBJ_IMAGE, pdfium_c.FPDF_PAGEOBJ_PATH):
            continue
        if level == 0 and obj.type == pdfium_c.FPDF_PAGEOBJ_PATH:
            continue  # top-level paths are clustered into charts elsewhere (figures)
        box = _visible_box(obj, matrices[-1] if level else None)
        if box is None:
            continue
        if obj.type == pdfium_c.FPDF_PAGEOBJ_IMAGE:
            found.images.append((box, _pixels(obj)))
        if drawn is not None:
            drawn.append(box)
    if drawn:
        found.drawings.append(union(drawn))
    return found


def _visible_box(obj: pdfium.PdfObject, matrix: Optional[pdfium.PdfMatrix]) -> Optional[BBox]:
    """The object's bounds cut to its clip path, in page space; None when nothing of it is visible."""
    box: BBox = tuple(obj.get_bounds())
    for clip in _clip_boxes(obj):
        box = (max(box[0], clip[0]), max(box[1], clip[1]), min(box[2], clip[2]), min(box[3], clip[3]))
    if box[2] - box[0] <= 0 or box[3] - box[1] <= 0:
        return None
    return tuple(matrix.on_rect(*box)) if matrix is not None else box


def _clip_boxes(obj: pdfium.PdfObject) -> list[BBox]:
    """Bounding boxes of the object's clip paths (in the space of its bounds)."""
    clip = pdfium_c.FPDFPageObj_GetClipPath(obj.raw)
    if not clip:
        return []
    boxes = []
    x, y = ctypes.c_float(), ctypes.c_float()
    for index in range(pdfium_c.FPDFClipPath_CountPaths(clip)):
        xs, ys = [], []
        for segment_no in range(pdfium_c.FPDFClipPath_CountPathSegments(clip, index)):
            segment = pdfium_c.FPDFClipPath_GetPathSegment(clip, index, segment_no)
            if segment and pdfium_c.FPDFPathSegment_GetPoint(segment, ctypes.byref(x), ctypes.byref(y)):
                xs.append(x.value)
                ys.append(y.value)
        if xs:
            boxes.append((min(xs), min(ys), max(xs), max(ys)))
    return boxes


def _pixels(obj: pdfium.PdfObject) -> tuple[int, int]:
    try:
        return tuple(obj.get_px_size())
    except pdfium.PdfiumError:
        return (0, 0)
