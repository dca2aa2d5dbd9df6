"""Which pages are scans (they are OCR'd), and a scan rendered for the OCR."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Optional, Sequence

import pypdfium2 as pdfium
from PIL import Image

from backend.documents.figures import image_boxes
from backend.documents.layout import TextLine, is_visible_char
from backend.documents.limits import PageLimits
from backend.documents.ocr.ahead import ocr_dpi
from backend.documents.page_lines import PageLines
from backend.documents.pdf_checks import open_pdf
from backend.documents.pdfium_lock import PDFIUM_LOCK
from backend.settings import IngestSettings, Settings
from backend.stage_times import stage

log = logging.getLogger(__name__)

MIN_VISIBLE_CHARS = 20  # fewer than this and mostly image: a scanned page
MIN_IMAGE_COVER = 0.5


def is_scanned(lines: Sequence[TextLine], images: Sequence[tuple], page_area: float) -> bool:
    """Fewer than 20 visible characters and images over half the page (an invisible OCR layer counts)."""
    visible = sum(1 for ln in lines for c in ln.chars if is_visible_char(c.text))
    if visible >= MIN_VISIBLE_CHARS or page_area <= 0:
        return False
    covered = sum(max(0.0, b[2] - b[0]) * max(0.0, b[3] - b[1]) for b, _ in images)
    return covered / page_area > MIN_IMAGE_COVER


def has_scanned_pages(path: os.PathLike | str, settings: Optional[Settings] = None) -> bool:
    """Whether parsing will OCR any page: the same test, reading text only on pages with images."""
    return bool(scanned_pages(path, settings, first_only=True))


def scanned_pages(path: os.PathLike | str, settings: Optional[Settings] = None, first_only: bool = False) -> list[int]:
    """The indexes of the pages parsing will OCR (the first one only, with ``first_only``)."""
    limits = PageLimits(Path(path).name, settings.ingest if settings is not None else IngestSettings())
    with PDFIUM_LOCK:
        pdf = open_pdf(Path(path))
        count = len(pdf)  # a pdfium call too
    found: list[int] = []
    try:
        for index in range(count):
            with PDFIUM_LOCK:  # page by page, so a preview waits for one page at most
                if _page_is_scanned(pdf, index, limits):
                    found.append(index)
            if found and first_only:
                break
        return found
    finally:
        with PDFIUM_LOCK:
            pdf.close()


def load_page(pdf: pdfium.PdfDocument, index: int) -> Optional[pdfium.PdfPage]:
    """The page, or None when pdfium cannot load it (a broken page tree): the other pages are still read."""
    try:
        return pdf[index]
    except pdfium.PdfiumError as exc:
        log.warning("page %d cannot be loaded (%s)", index + 1, exc)
        return None


def _page_is_scanned(pdf: pdfium.PdfDocument, index: int, limits: PageLimits) -> bool:
    page = load_page(pdf, index)
    if page is None:
        return False
    try:
        images = image_boxes(page)
        return bool(images) and is_scanned(
            PageLines(limits).read(page, index), images, page.get_width() * page.get_height()
        )
    finally:
        page.close()


@stage("ocr_rendering")
def render_scan(page: pdfium.PdfPage, images: Sequence[tuple], limits: PageLimits, dpi: int, index: int) -> Image.Image:
    """The scanned page as the OCR reads it: at the scan's own resolution, at most ``dpi`` (ocr.dpi)."""
    scale = limits.render_dpi(page.get_width(), page.get_height(), ocr_dpi(dpi, images), index) / 72.0
    bitmap = page.render(scale=scale)
    try:
        return bitmap.to_pil().convert("RGB")
    finally:
        bitmap.close()
