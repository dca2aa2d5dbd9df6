"""PDF validation and page-by-page parsing: text layer, tables, figures, OCR for scanned pages.

``iter_pages`` yields one ``ParsedPage`` at a time so the caller can report progress and cancel
between pages. Running headers and footers are found first with a cheap pass over every page.
"""

from __future__ import annotations

import logging
import math
import mmap
import os
import re
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Generator, Optional, Sequence

import pypdfium2 as pdfium
from PIL import Image

from backend.cpu import usable_cpus
from backend.documents.equations import body_size, formula_regions, mark_equations, ocr_formulas
from backend.documents.figures import PageFigure, find_figures, image_boxes, render_region
from backend.documents.layout import TextLine, is_visible_char, lines_to_text, order_lines, read_lines
from backend.documents.limits import PageLimits, check_page_sizes, check_streams
from backend.documents.ocr import OCREngine, get_ocr_engine
from backend.documents.pdfium_lock import PDFIUM_LOCK
from backend.documents.tables import find_tables, has_ruling, page_paths, remove_table_text, table_blocks
from backend.errors import DocumentError
from backend.settings import IngestSettings, Settings
from backend.types import PageText

log = logging.getLogger(__name__)

MIN_VISIBLE_CHARS = 20  # fewer than this and mostly image: a scanned page
MIN_IMAGE_COVER = 0.5
MARGIN_ZONE = 0.09  # share of the page height where running headers and footers live
MAX_OCR_WORKERS = 4
MAX_FORMULAS_PER_PAGE = 6  # more glyph clusters than this are a drawing, not formulas
FORMULA_DPI = 216
_EOF_WINDOW = 8192

PAGE_NUMBER = re.compile(
    r"^(?:[-–—·•\s]*\d{1,4}[-–—·•\s]*"
    r"|第\s*\d+\s*页(?:\s*[/，,]?\s*共\s*\d+\s*页)?"
    r"|(?:page|p\.|pg\.?)\s*\d+(?:\s*(?:of|/)\s*\d+)?"
    r"|\d+\s*(?:/|of)\s*\d+"
    r"|[ivxlcdm]{1,6})$",
    re.IGNORECASE)


@dataclass
class ParsedPage:
    """One parsed page: body text with tables inlined as Markdown, figures, and how it was read."""
    page: int  # 1-based
    text: str
    ocr: bool = False
    figures: list[PageFigure] = field(default_factory=list)
    tables: int = 0
    empty_ocr: bool = False  # OCR ran and found no text
    unreadable: bool = False  # pdfium could not load the page (e.g. a cycle in the page tree)
    cut_objects: int = 0  # text objects pdfium cut at PDFIUM_STRING_LIMIT characters

    def to_page_text(self) -> PageText:
        return PageText(page=self.page, text=self.text, ocr=self.ocr)


# ---------------------------------------------------------------------------------------------- checks

def inspect_pdf(path: os.PathLike | str, settings: Settings) -> int:
    """Check the file before any work and return its page count; DocumentError names the file and why."""
    path = Path(path)
    name = path.name
    size = _file_size(path)
    limit_mb = settings.ingest.max_file_mb
    if size > limit_mb * 1024 * 1024:
        raise DocumentError(f"{name}: {size / 1024 / 1024:.1f} MB is over the {limit_mb:g} MB limit")
    with path.open("rb") as handle:
        head = handle.read(1024)
        handle.seek(max(0, size - _EOF_WINDOW))
        tail = handle.read()
    if b"%PDF-" not in head:
        raise DocumentError(f"{name}: not a PDF ({_guess_kind(head)})")
    if b"%%EOF" not in tail and not _has_eof_marker(path):
        raise DocumentError(f"{name}: the PDF is truncated or corrupt (no end-of-file marker)")
    check_streams(path, name, settings.ingest)
    with PDFIUM_LOCK:
        pdf = open_pdf(path)
        try:
            pages = len(pdf)
            check_page_sizes(pdf, name, settings.ingest)
        finally:
            pdf.close()
    if pages == 0:
        raise DocumentError(f"{name}: the PDF has no pages")
    if pages > settings.ingest.max_pages:
        raise DocumentError(f"{name}: {pages} pages is over the limit of {settings.ingest.max_pages} pages")
    return pages


def _has_eof_marker(path: Path) -> bool:
    """Bytes after the last ``%%EOF`` (appended by some mailers and uploaders) do not make a PDF corrupt:
    pdfium reads it, so look for the marker in the whole file, not only its end."""
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        found, size = data.rfind(b"%%EOF"), len(data)
    if found >= 0:
        log.warning("%s: %d bytes after the end-of-file marker are ignored", path.name, size - found - 5)
    return found >= 0


def _file_size(path: Path) -> int:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise DocumentError(f"{path.name}: cannot be read ({exc.strerror or exc})") from None
    if not path.is_file():
        raise DocumentError(f"{path.name}: not a file")
    if size == 0:
        raise DocumentError(f"{path.name}: the file is empty (0 bytes)")
    return size


_MAGIC = ((b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"), (b"GIF8", "a GIF image"),
          (b"PK\x03\x04", "a ZIP archive, e.g. a Word or Excel file"), (b"\xd0\xcf\x11\xe0", "an old Office file"),
          (b"{\\rtf", "an RTF document"), (b"II*\x00", "a TIFF image"), (b"MM\x00*", "a TIFF image"))


def _guess_kind(head: bytes) -> str:
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return f"it is {kind}"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return "unknown binary content"
    return "it looks like plain text"


def open_pdf(path: Path) -> pdfium.PdfDocument:
    try:
        return pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        message = str(exc).lower()
        if "password" in message:
            raise DocumentError(f"{path.name}: the PDF is password-protected") from None
        raise DocumentError(f"{path.name}: the PDF is corrupt or unreadable ({exc})") from None


# ------------------------------------------------------------------------------------------- parsing

def iter_pages(path: os.PathLike | str, settings: Settings,
               ocr_engine: Optional[OCREngine] = None) -> Generator[ParsedPage, None, None]:
    """Parse the PDF page by page. OCR runs only on scanned pages, with ``ocr_engine`` or the configured one."""
    path = Path(path)
    page_count = inspect_pdf(path, settings)
    with PDFIUM_LOCK:
        parser = _PageParser(path, open_pdf(path), settings, ocr_engine)
    try:
        with PDFIUM_LOCK:
            parser.survey(page_count)
        for index in range(page_count):
            with PDFIUM_LOCK:  # released while the page is handed over: the reader may wait long
                parsed = parser.parse(index)
            yield parsed
    finally:
        with PDFIUM_LOCK:
            parser.close()


class _PageParser:
    """State shared by the pages of one document: running lines, the pdfplumber handle, the OCR engine."""

    def __init__(self, path: Path, pdf: pdfium.PdfDocument, settings: Settings,
                 ocr_engine: Optional[OCREngine]) -> None:
        self.path = path
        self.pdf = pdf
        self.settings = settings
        self._ocr_engine = ocr_engine
        self._plumber: Any = None
        self.running: set[tuple[str, str]] = set()  # (zone, key) of headers/footers
        self.scanned: dict[int, list] = {}  # page index -> its image boxes, for pages that need OCR
        self._ocr_edges: dict[str, str] = {}  # first/last line key of the previous OCR'd page
        self._ocr_ahead: Optional[_OCRAhead] = None
        self.limits = PageLimits(path.name, settings.ingest)
        self.unreadable: set[int] = set()  # page indexes pdfium cannot load

    def close(self) -> None:
        if self._ocr_ahead is not None:
            self._ocr_ahead.close()
        if self._plumber is not None:
            self._plumber.close()
        self.pdf.close()

    # first pass ------------------------------------------------------------------------------
    def survey(self, page_count: int) -> None:
        """Find the scanned pages, and the lines in the top or bottom margin repeated on at least half of
        the pages (digits ignored): running headers and footers."""
        counts: Counter[tuple[str, str]] = Counter()
        for index in range(page_count):
            page = _load_page(self.pdf, index)
            if page is None:
                self.unreadable.add(index)
                continue
            try:
                lines = _read_page_lines(page, index, self.limits)
                images = image_boxes(page)
                height = page.get_height()
                if is_scanned(lines, images, page.get_width() * height):
                    self.scanned[index] = images
                counts.update({(zone, margin_key(ln.text)) for ln in lines
                               if (zone := _margin_zone(ln, height)) is not None})
            finally:
                page.close()
        needed = max(2, math.ceil(0.5 * page_count))
        self.running = {key for key, n in counts.items() if n >= needed} if page_count >= 2 else set()
        if self.running:
            log.debug("%s: running headers/footers %s", self.path.name, sorted(self.running))

    # second pass -----------------------------------------------------------------------------
    def parse(self, index: int) -> ParsedPage:
        page = None if index in self.unreadable else _load_page(self.pdf, index)
        if page is None:
            return ParsedPage(index + 1, "", unreadable=True)
        try:
            if index in self.scanned:
                return self._parse_scanned(page, index, self.scanned[index])
            images = image_boxes(page)
            lines = _read_page_lines(page, index, self.limits, _obstacles(page, images))
            parsed = self._parse_native(page, index, lines, images)
            parsed.cut_objects = self.limits.cut_pages.get(index, 0)
            return parsed
        finally:
            page.close()

    def _parse_native(self, page: pdfium.PdfPage, index: int, lines: list[TextLine],
                      images: list) -> ParsedPage:
        height = page.get_height()
        body = [ln for ln in lines if not self._is_margin_line(ln, height)]
        paths = page_paths(page)
        tables = self._tables(index, page, body, paths)
        if tables:
            body = order_lines(remove_table_text(body, tables) + table_blocks(tables), _obstacles(page, images))
        ingest = self.settings.ingest
        figures = find_figures(page, index + 1, body, images, paths, [t.box for t in tables],
                               ingest.min_figure_px, self._figure_dpi(page, index), ingest.detect_vector_charts)
        formulas = self._vector_formulas(page, body, paths, [t.box for t in tables] + [f.box for f in figures]
                                         + [b for b, _ in images])
        if formulas:
            body = order_lines(body + formulas, _obstacles(page, images))
        mark_equations(body, page.get_width())
        for line in formulas:
            line.equation = True
        return ParsedPage(index + 1, lines_to_text(body, page.get_width()), ocr=False, figures=figures, tables=len(tables))

    def _vector_formulas(self, page: pdfium.PdfPage, body: list[TextLine], paths: list,
                         excluded: list) -> list[TextLine]:
        """Display formulas drawn as glyph outlines have no text: OCR them where they stand."""
        size = body_size(body)
        regions = formula_regions(paths, body, excluded, size)[:MAX_FORMULAS_PER_PAGE]
        if not regions:
            return []
        try:
            engine = self._ocr_engine or get_ocr_engine(self.settings)
        except DocumentError as exc:  # no OCR here: the formulas stay unread, the page is still parsed
            log.warning("%s: %d drawn formulas not read (%s)", self.path.name, len(regions), exc)
            return []
        return ocr_formulas(regions, lambda box: render_region(page, box, FORMULA_DPI), engine.recognize, size)

    def _is_margin_line(self, line: TextLine, height: float) -> bool:
        zone = _margin_zone(line, height)
        if zone is None:
            return False
        return bool(PAGE_NUMBER.match(line.text.strip())) or (zone, margin_key(line.text)) in self.running

    def _tables(self, index: int, page: pdfium.PdfPage, body: Sequence[TextLine], paths: list) -> list:
        if not self.settings.ingest.extract_tables or not has_ruling(paths):
            return []
        plumber_page = self._plumber_doc().pages[index]
        try:
            chars = [c for ln in body for c in ln.chars]
            return find_tables(plumber_page, page.get_height(), page.get_width(), chars)
        except Exception as exc:  # noqa: BLE001 - pdfminer raises many kinds; a table is not worth the page
            log.warning("%s page %d: table detection failed (%s)", self.path.name, index + 1, exc)
            return []
        finally:
            plumber_page.close()

    def _plumber_doc(self) -> Any:
        if self._plumber is None:
            import pdfplumber

            self._plumber = pdfplumber.open(self.path)
        return self._plumber

    def _parse_scanned(self, page: pdfium.PdfPage, index: int, images: list) -> ParsedPage:
        if self._ocr_ahead is None:
            engine = self._ocr_engine or get_ocr_engine(self.settings)
            self._ocr_ahead = _OCRAhead(engine, self._render_scan, sorted(self.scanned))
        text = self._strip_ocr_margins(self._ocr_ahead.text(index))
        ingest = self.settings.ingest
        # the scan itself covers the page: only smaller images on it are figures
        figures = find_figures(page, index + 1, [], images, [], [], ingest.min_figure_px, self._figure_dpi(page, index),
                               vector_charts=False, max_image_share=MIN_IMAGE_COVER)
        log.debug("%s page %d: OCR %d chars", self.path.name, index + 1, len(text))
        return ParsedPage(index + 1, text, ocr=True, figures=figures, empty_ocr=not text.strip())

    def _figure_dpi(self, page: pdfium.PdfPage, index: int) -> int:
        """Figures are cut from the page: a page that fits max_render_mpx at this dpi bounds any figure."""
        return int(self.limits.render_dpi(page.get_width(), page.get_height(), self.settings.ingest.figure_dpi, index))

    def _render_scan(self, index: int) -> Image.Image:
        page = self.pdf[index]
        try:
            dpi = self.limits.render_dpi(page.get_width(), page.get_height(),
                                         _ocr_dpi(self.settings.ocr.dpi, self.scanned[index]), index)
            bitmap = page.render(scale=dpi / 72.0)
            try:
                return bitmap.to_pil().convert("RGB")
            finally:
                bitmap.close()
        finally:
            page.close()

    def _strip_ocr_margins(self, text: str) -> str:
        """Drop page numbers and lines repeated at the top/bottom of the previous scanned page."""
        lines = text.split("\n")
        for zone, position in (("top", 0), ("bottom", -1)):
            content = [i for i, ln in enumerate(lines) if ln.strip()]
            if not content:
                break
            i = content[position]
            key = margin_key(lines[i])
            if PAGE_NUMBER.match(lines[i].strip()) or (zone, key) in self.running \
                    or self._ocr_edges.get(zone) == key:
                self._ocr_edges[zone] = key
                del lines[i]
            else:
                self._ocr_edges[zone] = key
        return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


class _OCRAhead:
    """OCR of the scanned pages on worker threads, a few pages ahead of the reader.

    One page per worker, each model run single-threaded: the recogniser's many small convolutions scale
    badly across threads (measured ~35 % more CPU for 2 threads), whole pages in parallel do not. Pages
    are rendered on the calling thread only (pdfium is not thread-safe); results come back in page order.
    """

    def __init__(self, engine: OCREngine, render: Callable[[int], Image.Image], pages: Sequence[int]) -> None:
        self._engine = engine
        self._render = render
        self._queue = list(pages)  # scanned page indexes not yet submitted, ascending
        self._workers = ocr_workers()
        self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="ocr")
        self._futures: dict[int, Future[str]] = {}

    def text(self, index: int) -> str:
        """The recognised text of page ``index``; keeps the next scanned pages in flight meanwhile."""
        self._queue = [i for i in self._queue if i != index]
        if index not in self._futures:
            self._submit(index)
        while self._queue and len(self._futures) < self._workers:
            self._submit(self._queue.pop(0))
        return _wait_without_pdfium_lock(self._futures.pop(index))

    def _submit(self, index: int) -> None:
        self._futures[index] = self._pool.submit(self._engine.recognize, self._render(index))

    def close(self) -> None:
        # A page still in flight finishes in the background: cancel must not wait for it.
        self._pool.shutdown(wait=False, cancel_futures=True)


def _wait_without_pdfium_lock(future: Future[str]) -> str:
    """OCR takes seconds and makes no pdfium call: previews may render meanwhile."""
    try:
        PDFIUM_LOCK.release()
    except RuntimeError:  # not held by this thread
        return future.result()
    try:
        return future.result()
    finally:
        PDFIUM_LOCK.acquire()


def ocr_workers() -> int:
    """Pages OCR'd at once: one per usable core, at most MAX_OCR_WORKERS (memory: a rendered page each)."""
    return max(1, min(MAX_OCR_WORKERS, usable_cpus()))


def _ocr_dpi(configured: int, images: Sequence[tuple]) -> float:
    """Rendering a scan above its own resolution adds pixels but no detail (and the detector shrinks the
    page to det_limit_side_len anyway): use the scan's resolution, at least 150 dpi, at most ocr.dpi."""
    native = [px[0] / max(1e-6, (b[2] - b[0]) / 72.0) for b, px in images if px and px[0]]
    if not native:
        return float(configured)
    return float(min(configured, max(150.0, max(native))))


def _read_page_lines(page: pdfium.PdfPage, index: int, limits: PageLimits,
                     obstacles: Sequence[tuple] = ()) -> list[TextLine]:
    textpage = page.get_textpage()
    try:
        limits.check_text(page, textpage, index)  # before lines are built: ~300 bytes per character
        return read_lines(textpage, obstacles)
    finally:
        textpage.close()


def _load_page(pdf: pdfium.PdfDocument, index: int) -> Optional[pdfium.PdfPage]:
    """The page, or None when pdfium cannot load it (a broken page tree): the other pages are still read."""
    try:
        return pdf[index]
    except pdfium.PdfiumError as exc:
        log.warning("page %d cannot be loaded (%s)", index + 1, exc)
        return None


def _obstacles(page: pdfium.PdfPage, images: Sequence[tuple]) -> list[tuple]:
    """Image boxes that shape the reading order (a wide figure separates bands of columns); a background
    as big as the page does not."""
    area = page.get_width() * page.get_height()
    return [b for b, _ in images if (b[2] - b[0]) * (b[3] - b[1]) < 0.5 * area]


def _margin_zone(line: TextLine, height: float) -> Optional[str]:
    if line.y0 >= height * (1 - MARGIN_ZONE):
        return "top"
    if line.y1 <= height * MARGIN_ZONE:
        return "bottom"
    return None


def margin_key(text: str) -> str:
    """Running lines differ only in their numbers: compare them with digits folded."""
    return re.sub(r"\d+", "#", re.sub(r"\s+", "", text)).lower()


def is_scanned(lines: Sequence[TextLine], images: Sequence[tuple], page_area: float) -> bool:
    """Fewer than 20 visible characters and images over half the page (an invisible OCR layer counts)."""
    visible = sum(1 for ln in lines for c in ln.chars if is_visible_char(c.text))
    if visible >= MIN_VISIBLE_CHARS or page_area <= 0:
        return False
    covered = sum(max(0.0, b[2] - b[0]) * max(0.0, b[3] - b[1]) for b, _ in images)
    return covered / page_area > MIN_IMAGE_COVER


def has_scanned_pages(path: os.PathLike | str, settings: Optional[Settings] = None) -> bool:
    """Whether parsing will OCR any page: the same test, reading text only on pages with images."""
    limits = PageLimits(Path(path).name, settings.ingest if settings is not None else IngestSettings())
    with PDFIUM_LOCK:
        pdf = open_pdf(Path(path))
        count = len(pdf)  # a pdfium call too
    try:
        for index in range(count):
            with PDFIUM_LOCK:  # page by page, so a preview waits for one page at most
                if _page_is_scanned(pdf, index, limits):
                    return True
        return False
    finally:
        with PDFIUM_LOCK:
            pdf.close()


def _page_is_scanned(pdf: pdfium.PdfDocument, index: int, limits: PageLimits) -> bool:
    page = _load_page(pdf, index)
    if page is None:
        return False
    try:
        images = image_boxes(page)
        return bool(images) and is_scanned(_read_page_lines(page, index, limits), images,
                                           page.get_width() * page.get_height())
    finally:
        page.close()


def parse_pdf(path: os.PathLike | str, settings: Settings,
              ocr_engine: Optional[OCREngine] = None) -> list[ParsedPage]:
    """All pages at once (tests, small files); ingestion should prefer ``iter_pages``."""
    return list(iter_pages(path, settings, ocr_engine))
