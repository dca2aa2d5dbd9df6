"""Page-by-page parsing of a PDF: text layer, tables, figures, formulas, OCR for scanned pages (pdf_checks first).

``iter_pages`` yields one ``ParsedPage`` at a time (progress, cancel and questions first between pages).
Running headers and footers are found first with a cheap pass over every page.
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generator, Optional, Sequence

import pypdfium2 as pdfium
from PIL import Image

from backend.cpu import let_questions_pass
from backend.documents.equations import (
    DrawnFormula,
    body_size,
    formula_regions,
    inline_formula_regions,
    mark_equations,
    ocr_formulas,
    ocr_inline_formulas,
    with_inline_pieces,
    with_numbers_attached,
)
from backend.documents.figure_mentions import TAIL_LINES
from backend.documents.figure_objects import PageObjects, page_objects
from backend.documents.figures import (
    PageFigure,
    find_figures,
    introduced_on_previous_page,
    render_region,
)
from backend.documents.formulas.lines import formulas_as_latex
from backend.documents.layout import BBox, TextLine, center_inside, order_lines
from backend.documents.layout_model import (
    NATIVE_DPI,
    layout_model,
    mark_equation_regions,
    regions_in_points,
    with_regions,
)
from backend.documents.limits import PageLimits
from backend.documents.ocr import OCREngine, get_ocr_engine
from backend.documents.ocr.ahead import OCRAhead
from backend.documents.page_lines import PageLines
from backend.documents.paragraphs import lines_to_text
from backend.documents.pdf_checks import inspect_pdf, open_pdf
from backend.documents.pdfium_lock import PDFIUM_LOCK
from backend.documents.reading_order import column_test_unsure
from backend.documents.scanned import MIN_IMAGE_COVER, is_scanned, load_page, render_scan
from backend.documents.tables import find_tables, has_ruling, page_paths, remove_table_text, table_blocks
from backend.errors import DocumentError
from backend.settings import Settings
from backend.stage_times import stage
from backend.types import PageText

log = logging.getLogger(__name__)

MARGIN_ZONE = 0.09  # share of the page height where running headers and footers live
MAX_FORMULAS_PER_PAGE = 6  # more glyph clusters than this are a drawing, not formulas
FORMULA_DPI = 216
MIN_FIGURE_LINES = 3  # text lines inside a drawn chart that make its page's reading order unsure

PAGE_NUMBER = re.compile(
    r"^(?:[-–—·•\s]*\d{1,4}[-–—·•\s]*"
    r"|第\s*\d+\s*页(?:\s*[/，,]?\s*共\s*\d+\s*页)?"
    r"|(?:page|p\.|pg\.?)\s*\d+(?:\s*(?:of|/)\s*\d+)?"
    r"|\d+\s*(?:/|of)\s*\d+"
    r"|[ivxlcdm]{1,6})$",
    re.IGNORECASE,
)


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
    formulas: list[DrawnFormula] = field(default_factory=list)  # display formulas drawn without text
    carry: dict = field(default_factory=dict)  # what the next page reads of this one (``_PageParser.carry``)

    def to_page_text(self) -> PageText:
        return PageText(page=self.page, text=self.text, ocr=self.ocr)


# ------------------------------------------------------------------------------------------- parsing


def iter_pages(
    path: os.PathLike | str,
    settings: Settings,
    ocr_engine: Optional[OCREngine] = None,
    first_page: int = 0,
    carry: Optional[dict] = None,
) -> Generator[ParsedPage, None, None]:
    """Parse the PDF page by page, from page index ``first_page`` (an interrupted upload resumes there, with
    the ``carry`` of the page before it). OCR runs only on scanned pages, with ``ocr_engine`` or the
    configured one."""
    path = Path(path)
    page_count = inspect_pdf(path, settings)
    with PDFIUM_LOCK:
        parser = _PageParser(path, open_pdf(path), settings, ocr_engine)
        parser.carry = carry or {}
    try:
        with PDFIUM_LOCK:
            parser.survey(page_count)  # every page: running headers are found on all of them
        for index in range(first_page, page_count):
            let_questions_pass()
            with PDFIUM_LOCK:  # released while the page is handed over: the reader may wait long
                parsed = parser.parse(index)
                parsed.carry = parser.carry
            yield parsed
    finally:
        with PDFIUM_LOCK:
            parser.close()


class _PageParser:
    """State shared by the pages of one document: running lines, the pdfplumber handle, the OCR engine."""

    def __init__(
        self, path: Path, pdf: pdfium.PdfDocument, settings: Settings, ocr_engine: Optional[OCREngine]
    ) -> None:
        self.path = path
        self.pdf = pdf
        self.settings = settings
        self._ocr_engine = ocr_engine
        self._plumber: Any = None
        self.running: set[tuple[str, str]] = set()  # (zone, key) of headers/footers
        self.scanned: dict[int, list] = {}  # page index -> its image boxes, for pages that need OCR
        self.objects: dict[int, PageObjects] = {}  # page index -> its images and drawings, for the others
        self._ocr_edges: dict[str, str] = {}  # first/last line key of the previous OCR'd page
        self._ocr_ahead: Optional[OCRAhead] = None
        self.limits = PageLimits(path.name, settings.ingest)
        self.lines = PageLines(self.limits, ocr=self._region_ocr)
        self.unreadable: set[int] = set()  # page indexes pdfium cannot load
        self.tail: list[str] = []  # the last lines of the previous page: what introduces a figure atop this one

    @property
    def carry(self) -> dict:
        """What the next page reads of the pages before it: the last OCR'd page's edge lines (a running header
        repeats them) and the last lines (what introduces a figure atop the next page). Kept with each page
        read, so that an interrupted upload resumes with them (without, its first page kept its header)."""
        return {"ocr_edges": dict(self._ocr_edges), "tail": list(self.tail)}

    @carry.setter
    def carry(self, carried: dict) -> None:
        self._ocr_edges = dict(carried.get("ocr_edges", {}))
        self.tail = list(carried.get("tail", []))

    def close(self) -> None:
        if self._ocr_ahead is not None:
            self._ocr_ahead.close()
        if self._plumber is not None:
            self._plumber.close()
        self.pdf.close()

    # first pass ------------------------------------------------------------------------------
    @stage("open_parse")
    def survey(self, page_count: int) -> None:
        """Find the scanned pages, and running headers and footers: margin lines on half the pages, digits aside."""
        counts: Counter[tuple[str, str]] = Counter()
        for index in range(page_count):
            page = load_page(self.pdf, index)
            if page is None:
                self.unreadable.add(index)
                continue
            try:
                lines = self.lines.first_pass(page, index)
                objects = page_objects(page)  # kept for the second pass: walking them is a tenth of a page's time
                images, height = objects.images, page.get_height()
                if is_scanned(lines, images, page.get_width() * height):
                    self.scanned[index] = images
                    self.lines.forget(index)
                else:
                    self.objects[index] = objects
                counts.update(
                    {(zone, margin_key(ln.text)) for ln in lines if (zone := _margin_zone(ln, height)) is not None}
                )
            finally:
                page.close()
        needed = max(2, math.ceil(0.5 * page_count))
        self.running = {key for key, n in counts.items() if n >= needed} if page_count >= 2 else set()
        if self.running:
            log.debug("%s: running headers/footers %s", self.path.name, sorted(self.running))

    # second pass -----------------------------------------------------------------------------
    @stage("open_parse")
    def parse(self, index: int) -> ParsedPage:
        page = None if index in self.unreadable else load_page(self.pdf, index)
        if page is None:
            return ParsedPage(index + 1, "", unreadable=True)
        try:
            if index in self.scanned:
                return self._parse_scanned(page, index, self.scanned[index])
            objects = self.objects.pop(index, None) or page_objects(page)
            lines = self.lines.second_pass(page, index, _obstacles(page, objects.images))
            parsed = self._parse_native(page, index, lines, objects)
            parsed.cut_objects = self.limits.cut_pages.get(index, 0)
            return parsed
        finally:
            page.close()

    def _parse_native(self, page: pdfium.PdfPage, index: int, lines: list[TextLine], objects: PageObjects):
        images, height = objects.images, page.get_height()
        text = self._without_margins(lines, height)
        obstacles = _obstacles(page, images)
        paths = page_paths(page)
        tables = self._tables(index, page, text, paths)
        body = _with_tables(text, tables, obstacles) if tables else text
        ingest = self.settings.ingest
        plots = [(p.box, p.text(ingest.figure_text_chars)) for p in self.lines.plots(index)]
        figures = find_figures(
            page,
            index + 1,
            body,
            images,
            paths,
            [t.box for t in tables],
            ingest.min_figure_px,
            self._figure_dpi(page, index),
            ingest.detect_vector_charts,
            word_plots=plots,
            drawings=objects.drawings,
        )
        introduced_on_previous_page(figures, body, self.tail)
        self.tail = [ln.text for ln in body if not ln.block][-TAIL_LINES:]
        regions = self._layout_regions(page, text, obstacles, figures)
        if regions:  # geometry alone was unsure: the layout model's figures and margins join in
            text, figure_boxes = with_regions(text, regions, height)
            obstacles = obstacles + figure_boxes
        pictures = [f.box for f in figures] + [b for b, _ in images]
        pieces = self._inline_symbols(page, text, paths, pictures)
        if pieces:  # symbols drawn as paths inside text rows and table cells
            text = with_inline_pieces(text, pieces)
            if any(center_inside(p.box, t.box) for p in pieces for t in tables):
                tables = self._tables(index, page, text, paths)
        if regions or pieces:
            body = _with_tables(text, tables, obstacles)
        formulas, drawn = self._vector_formulas(page, index + 1, body, paths, [t.box for t in tables] + pictures)
        if formulas:
            body = order_lines(with_numbers_attached(body, formulas) + formulas, obstacles)
        mark_equations(body, page.get_width())
        mark_equation_regions(body, regions)
        body = formulas_as_latex(body, paths)
        for line in formulas:
            line.equation = True
        page_text = lines_to_text(body, page.get_width())
        return ParsedPage(index + 1, page_text, ocr=False, figures=figures, tables=len(tables), formulas=drawn)

    @stage("formulas")
    def _vector_formulas(
        self, page: pdfium.PdfPage, page_no: int, body: list[TextLine], paths: list, excluded: list
    ) -> tuple[list[TextLine], list[DrawnFormula]]:
        """Display formulas drawn as glyph outlines have no text: OCR them where they stand, keep their images."""
        size = body_size(body)
        regions = formula_regions(paths, body, excluded, size)[:MAX_FORMULAS_PER_PAGE]
        engine = self._region_ocr(len(regions))
        if engine is None:
            return [], []

        def render(box: BBox) -> Image.Image:
            return render_region(page, box, FORMULA_DPI)

        return ocr_formulas(regions, render, engine.recognize, size, page_no)

    @stage("layout")
    def _layout_regions(
        self, page: pdfium.PdfPage, lines: list[TextLine], obstacles: list, figures: list[PageFigure]
    ) -> list:
        """The layout model's regions (PDF points) on a page where geometry alone is unsure, else none.
        Unsure: the column test refused a gutter between side-by-side text (``column_test_unsure``), or a
        chart drawn as vectors holds text lines (its labels were ordered as if it were not there)."""
        if not self.settings.ingest.layout_model_native or not lines:
            return []
        drawn = [f.box for f in figures if f.kind == "vector"]
        if not (
            any(sum(center_inside(ln.box, box) for ln in lines) >= MIN_FIGURE_LINES for box in drawn)
            or column_test_unsure(lines, obstacles)
        ):
            return []
        bitmap = page.render(scale=NATIVE_DPI / 72.0)
        try:
            image = bitmap.to_pil()
        finally:
            bitmap.close()
        return regions_in_points(layout_model().regions(image), NATIVE_DPI, page.get_height())

    @stage("formulas")
    def _inline_symbols(
        self, page: pdfium.PdfPage, lines: list[TextLine], paths: list, excluded: list
    ) -> list[TextLine]:
        """Symbols drawn as glyph outlines inside text rows ("其中 m 是粒子质量") have no text: OCR them."""
        size = body_size(lines)
        regions = inline_formula_regions(paths, lines, excluded, size)
        engine = self._region_ocr(len(regions))
        if engine is None:
            return []
        return ocr_inline_formulas(regions, lambda box: render_region(page, box, FORMULA_DPI), engine.recognize, size)

    def _region_ocr(self, regions: int) -> Optional[OCREngine]:
        """The OCR engine for ``regions`` parts of a text page (drawn formulas, lines of noise), if any."""
        if not regions:
            return None
        try:
            return self._ocr_engine or get_ocr_engine(self.settings)
        except DocumentError as exc:  # no OCR here: the regions stay unread, the page is still parsed
            log.warning("%s: %d regions not read by OCR (%s)", self.path.name, regions, exc)
            return None

    def _without_margins(self, lines: list[TextLine], height: float) -> list[TextLine]:
        body = [ln for ln in lines if not self._is_margin_line(ln, height)]
        if body or any(PAGE_NUMBER.match(ln.text.strip()) for ln in lines):
            return body
        # edge lines that repeat on every page are all this page says (one line a page): they are its text
        return lines

    def _is_margin_line(self, line: TextLine, height: float) -> bool:
        zone = _margin_zone(line, height)
        if zone is None:
            return False
        return bool(PAGE_NUMBER.match(line.text.strip())) or (zone, margin_key(line.text)) in self.running

    @stage("tables")
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
            self._ocr_ahead = OCRAhead(engine, self._render_scan, sorted(i for i in self.scanned if i >= index))
        read = self._ocr_ahead.page(index)
        text = self._strip_ocr_margins(read.text)
        self.tail = [ln for ln in text.splitlines() if ln.strip()][-TAIL_LINES:]
        ingest = self.settings.ingest
        # the scan itself covers the page: only smaller images on it are figures
        figures = find_figures(
            page,
            index + 1,
            [],
            images,
            [],
            [],
            ingest.min_figure_px,
            self._figure_dpi(page, index),
            vector_charts=False,
            max_image_share=MIN_IMAGE_COVER,
        )
        log.debug("%s page %d: OCR %d chars", self.path.name, index + 1, len(text))
        return ParsedPage(
            index + 1, text, ocr=True, figures=figures, empty_ocr=not text.strip(), formulas=read.formulas
        )

    def _figure_dpi(self, page: pdfium.PdfPage, index: int) -> int:
        """Figures are cut from the page: a page that fits max_render_mpx at this dpi bounds any figure."""
        return int(self.limits.render_dpi(page.get_width(), page.get_height(), self.settings.ingest.figure_dpi, index))

    def _render_scan(self, index: int) -> Image.Image:
        page = self.pdf[index]
        try:
            return render_scan(page, self.scanned[index], self.limits, self.settings.ocr.dpi, index)
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
            repeated = (zone, key) in self.running or self._ocr_edges.get(zone) == key
            self._ocr_edges[zone] = key
            # a page's only line is what the page says, even when every page starts alike
            if PAGE_NUMBER.match(lines[i].strip()) or (repeated and len(content) > 1):
                del lines[i]
        return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _with_tables(lines: list[TextLine], tables: list, obstacles: list[tuple]) -> list[TextLine]:
    """The page's lines with the tables' text replaced by one Markdown block per table, in reading order."""
    if not tables:
        return order_lines(lines, obstacles)
    return order_lines(remove_table_text(lines, tables) + table_blocks(tables), obstacles)


def _obstacles(page: pdfium.PdfPage, images: Sequence[tuple]) -> list[tuple]:
    """Image boxes that shape the reading order (a wide figure separates columns); not a page-sized background."""
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


def parse_pdf(path: os.PathLike | str, settings: Settings, ocr_engine: Optional[OCREngine] = None) -> list[ParsedPage]:
    """All pages at once (tests, small files); ingestion should prefer ``iter_pages``."""
    return list(iter_pages(path, settings, ocr_engine))
