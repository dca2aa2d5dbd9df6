"""Page previews: one PDF page as PNG with the lines of a chunk framed, so the user can check a source."""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pypdfium2 as pdfium
from PIL import Image, ImageDraw

from backend.documents.figures import page_box
from backend.documents.pdfium_lock import PDFIUM_LOCK
from backend.documents.tex_fonts import SHOWN_SYMBOLS
from backend.errors import DocLensError

log = logging.getLogger(__name__)

PREVIEW_SCALE = 1.5  # 108 dpi: readable, and a page stays well under 1 MB
FRAME_COLOUR = (234, 88, 12)
MAX_PROBES = 80  # pieces of a passage looked for; math ends pieces at each symbol, so a passage has more
FRAMES_VERSION = 4  # part of a preview's file name: previews cached before a change to the frames re-render
SCANNED_MAX_CHARS = 20  # a page with fewer characters in its text layer is a scan (as for OCR at ingest)
MIN_LINE_CHARS = 4
LINE_MATCH_SHARE = 0.6
Rect = tuple[float, float, float, float]
# pieces also end at a symbol TeX's math fonts draw without a Unicode map: the stored text reads it as it
# shows ("‖x‖"), the PDF's own text, which the search looks in, as its code's letter ("kxk"); and at an
# operator's limits, which the stored text writes as LaTeX ("min_{f∈F}") and the PDF on a row of their own
_SPLIT = re.compile(r"[\n。！？；!?;|" + re.escape(SHOWN_SYMBOLS) + r"]+|[_^]\{|\}|(?<=[.,:])\s+")


LineReader = Callable[[Image.Image], Sequence[Any]]  # an OCR engine's ``lines``: items with text, x0, y0, x1, y1


def render_page(
    pdf_path: Path, page_number: int, highlight: str, out_dir: Path, read_lines: LineReader | None = None
) -> Path:
    """Render ``page_number`` (1-based) of ``pdf_path`` into ``out_dir`` with ``highlight`` framed. A scanned
    page has no text to search: ``read_lines`` (OCR) finds the passage's lines there, once per page."""
    key = hashlib.sha1(f"{FRAMES_VERSION}:{highlight}".encode()).hexdigest()[:12]
    target = out_dir / f"p{page_number}_{key}.png"
    if target.exists():
        return target
    with PDFIUM_LOCK:
        image, frames, scanned = _render_framed(pdf_path, page_number, highlight)
    out_dir.mkdir(parents=True, exist_ok=True)
    if not frames and scanned and read_lines is not None and highlight.strip():
        lines = _ocr_lines(image, read_lines, out_dir / f"p{page_number}_ocr.json")  # seconds: not under the lock
        frames = passage_lines(lines, highlight)
    _draw_frames(image, frames)
    partial = target.with_suffix(".part.png")
    image.save(partial, format="PNG", optimize=True)
    partial.replace(target)
    return target


def ocr_line_reader(settings: Any) -> LineReader:
    """The configured OCR engine's line reader, created on first use (no frame if the engine has none)."""

    def read(image: Image.Image) -> Sequence[Any]:
        from backend.documents.ocr import get_ocr_engine

        lines = getattr(get_ocr_engine(settings), "lines", None)
        return lines(image) if lines is not None else []

    return read


def _render_framed(pdf_path: Path, page_number: int, highlight: str) -> tuple[Image.Image, list[Rect], bool]:
    """The page image, the frames of ``highlight`` found in its text layer (pixels) and whether the page
    has (next to) no text layer, i.e. is a scan."""
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
        textpage = page.get_textpage()
        try:
            scanned = textpage.count_chars() < SCANNED_MAX_CHARS
            boxes = _highlight_boxes(textpage, highlight) if highlight.strip() else []
        finally:
            textpage.close()
        return image, _to_pixels(_merge_lines(boxes), page_box(page)), scanned
    finally:
        document.close()


def _ocr_lines(image: Image.Image, read_lines: LineReader, cache: Path) -> list[tuple[str, Rect]]:
    """The page's OCR lines in preview pixels, kept beside its previews (the index stores no boxes)."""
    try:
        return [(text, tuple(box)) for text, box in json.loads(cache.read_text(encoding="utf-8"))]
    except (OSError, ValueError, TypeError):
        pass
    try:
        lines = [(line.text, (line.x0, line.y0, line.x1, line.y1)) for line in read_lines(image)]
    except DocLensError as exc:  # the preview still shows the page, only without a frame
        log.warning("no frame on the scanned page: OCR failed (%s)", exc)
        return []
    partial = cache.with_suffix(".part")
    partial.write_text(json.dumps(lines, ensure_ascii=False), encoding="utf-8")
    partial.replace(cache)
    return lines


def passage_lines(lines: Sequence[tuple[str, Rect]], passage: str) -> list[Rect]:
    """The boxes of the OCR lines that belong to ``passage``: the line's text is in it, or most of its
    three-character pieces are (OCR of the preview and of the ingest differ in a character here and there)."""
    wanted = _squash(passage)
    pieces = _trigrams(wanted)
    found = []
    for text, box in lines:
        line = _squash(text)
        if len(line) < MIN_LINE_CHARS:
            continue  # page numbers and stray marks would match anywhere
        grams = _trigrams(line)
        if line in wanted or (grams and len(grams & pieces) / len(grams) >= LINE_MATCH_SHARE):
            found.append(box)
    return found


def _squash(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.casefold())


def _trigrams(text: str) -> set[str]:
    return {text[i : i + 3] for i in range(len(text) - 2)}


def _probes(text: str) -> list[str]:
    """Short pieces of the chunk that survive line breaks in the PDF: PDF text search cannot span them."""
    pieces = []
    for part in _SPLIT.split(text):
        part = " ".join(part.split()).strip(" |-*#>")
        if len(part) >= 4:
            pieces.append(part[:80])
    return pieces[:MAX_PROBES]


def _highlight_boxes(textpage: pdfium.PdfTextPage, text: str) -> list[Rect]:
    boxes = []
    for probe in _probes(text):
        found = _find(textpage, probe) or (_find(textpage, probe[:16]) if len(probe) > 16 else None)
        if found:
            boxes.extend(_char_boxes(textpage, *found))
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


def _to_pixels(lines: Sequence[Rect], visible: Rect) -> list[Rect]:
    """PDF user space (origin bottom-left; the rendered page is the ``visible`` box, which need not start
    at 0, 0) to preview pixels (origin top-left)."""
    return [
        (
            (left - visible[0]) * PREVIEW_SCALE,
            (visible[3] - top) * PREVIEW_SCALE,
            (right - visible[0]) * PREVIEW_SCALE,
            (visible[3] - bottom) * PREVIEW_SCALE,
        )
        for left, bottom, right, top in lines
    ]


def _draw_frames(image: Image.Image, frames: Sequence[Rect]) -> None:
    """One frame around each line of the passage (pixel boxes: left, top, right, bottom)."""
    if not frames:
        return
    draw = ImageDraw.Draw(image, "RGBA")
    for x0, y0, x1, y1 in frames:
        draw.rectangle(
            (x0 - 3, y0 - 3, x1 + 3, y1 + 3), fill=FRAME_COLOUR + (40,), outline=FRAME_COLOUR + (255,), width=2
        )


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
