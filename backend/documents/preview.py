"""Page previews: one PDF page as PNG with the lines of a chunk framed, so the user can check a source."""

from __future__ import annotations

import hashlib
import logging
import re
from pathlib import Path

import pypdfium2 as pdfium
from PIL import Image, ImageDraw

from backend.documents.figures import page_box
from backend.documents.pdfium_lock import PDFIUM_LOCK
from backend.errors import DocLensError

log = logging.getLogger(__name__)

PREVIEW_SCALE = 1.5  # 108 dpi: readable, and a page stays well under 1 MB
FRAME_COLOUR = (234, 88, 12)
MAX_PROBES = 40
_SPLIT = re.compile(r"[\n。！？；!?;|]+|(?<=[.,:])\s+")


def render_page(pdf_path: Path, page_number: int, highlight: str, out_dir: Path) -> Path:
    """Render ``page_number`` (1-based) of ``pdf_path`` into ``out_dir`` with ``highlight`` framed."""
    key = hashlib.sha1(highlight.encode("utf-8")).hexdigest()[:12]
    target = out_dir / f"p{page_number}_{key}.png"
    if target.exists():
        return target
    with PDFIUM_LOCK:
        image = _render_framed(pdf_path, page_number, highlight)
    out_dir.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part.png")
    image.save(partial, format="PNG", optimize=True)
    partial.replace(target)
    return target


def _render_framed(pdf_path: Path, page_number: int, highlight: str) -> Image.Image:
    try:
        document = pdfium.PdfDocument(str(pdf_path))
    except pdfium.PdfiumError as exc:
        raise DocLensError(f"{pdf_path.name}: cannot be opened for preview ({exc})") from None
    try:
        if not 1 <= page_number <= len(document):
            raise DocLensError(f"page {page_number} does not exist (the document has {len(document)} pages)")
        page = document[page_number - 1]
        bitmap = page.render(scale=PREVIEW_SCALE)
        image = bitmap.to_pil().convert("RGB")  # a copy: the bitmap is freed here, under the lock
        bitmap.close()
        boxes = _highlight_boxes(page, highlight) if highlight.strip() else []
        _draw_frames(image, boxes, page_box(page))
        return image
    finally:
        document.close()


def _probes(text: str) -> list[str]:
    """Short pieces of the chunk that survive line breaks in the PDF: PDF text search cannot span them."""
    pieces = []
    for part in _SPLIT.split(text):
        part = " ".join(part.split()).strip(" |-*#>")
        if len(part) >= 4:
            pieces.append(part[:80])
    return pieces[:MAX_PROBES]


def _highlight_boxes(page: pdfium.PdfPage, text: str) -> list[tuple[float, float, float, float]]:
    textpage = page.get_textpage()
    boxes = []
    try:
        for probe in _probes(text):
            found = _find(textpage, probe) or (_find(textpage, probe[:16]) if len(probe) > 16 else None)
            if found:
                boxes.extend(_char_boxes(textpage, *found))
    finally:
        textpage.close()
    return boxes


def _find(textpage: pdfium.PdfTextPage, probe: str):
    searcher = textpage.search(probe, match_case=False, match_whole_word=False)
    try:
        return searcher.get_next()
    finally:
        searcher.close()


def _char_boxes(textpage: pdfium.PdfTextPage, index: int, count: int) -> list[tuple[float, float, float, float]]:
    boxes = []
    for i in range(index, index + count):
        try:
            boxes.append(textpage.get_charbox(i, loose=True))
        except (pdfium.PdfiumError, IndexError):
            continue
    return boxes


def _draw_frames(image, boxes, visible: tuple[float, float, float, float]) -> None:
    """One frame around each line of found text (PDF user space, origin bottom-left; the rendered page is
    the ``visible`` box, which need not start at 0, 0) and a bar in the margin."""
    if not boxes:
        return
    draw = ImageDraw.Draw(image, "RGBA")
    for left, bottom, right, top in _merge_lines(boxes):
        x0, y0 = (left - visible[0]) * PREVIEW_SCALE - 3, (visible[3] - top) * PREVIEW_SCALE - 3
        x1, y1 = (right - visible[0]) * PREVIEW_SCALE + 3, (visible[3] - bottom) * PREVIEW_SCALE + 3
        draw.rectangle((x0, y0, x1, y1), fill=FRAME_COLOUR + (40,), outline=FRAME_COLOUR + (255,), width=2)


def _merge_lines(boxes):
    """Characters on the same baseline become one rectangle."""
    lines: list[list[float]] = []
    for left, bottom, right, top in sorted(boxes, key=lambda b: (-b[3], b[0])):
        for line in lines:
            if abs(line[1] - bottom) < 3 and abs(line[3] - top) < 3:
                line[0], line[2] = min(line[0], left), max(line[2], right)
                break
        else:
            lines.append([left, bottom, right, top])
    return [tuple(line) for line in lines]
