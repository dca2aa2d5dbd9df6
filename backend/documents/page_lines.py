"""A native page's text lines read once for both passes over a document.

The first pass (running headers, scanned pages) and the second (the page's text) need the same glyphs;
reading them is most of the cost of parsing a native page, so the first pass keeps its lines, up to a
budget, for the second to order again with the page's images as obstacles. Plots drawn with words
(word_plots) are taken out of the lines as they are read: they are figures, and ordering them cost minutes.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import pypdfium2 as pdfium

from backend.documents.figures import render_region
from backend.documents.garbled import MAX_LINES_PER_DOCUMENT, MAX_LINES_PER_PAGE, noise_fonts, read_garbled
from backend.documents.layout import BBox, TextLine, order_lines, raw_lines
from backend.documents.limits import PageLimits
from backend.documents.word_plots import WordPlot, split_word_plots

GARBLED_DPI = 300  # lines set small inside figures (LCSTS's examples are 7 pt)
KEPT_CHARS = 200_000  # glyphs kept between the passes per document: ~50 MB, some 50 pages of a paper


class PageLines:
    """Reads a page's lines (after the page's character limit is checked); keeps the first pass's."""

    def __init__(
        self, limits: PageLimits, kept_chars: Optional[int] = None, ocr: Optional[Callable[[int], Any]] = None
    ) -> None:
        """``ocr(n)``: an OCR engine for n regions to read, or None (lines of noise are then left out)."""
        self.limits = limits
        self._ocr = ocr
        self._ocr_lines_left = MAX_LINES_PER_DOCUMENT
        self._budget = KEPT_CHARS if kept_chars is None else kept_chars
        self._kept: dict[int, list[TextLine]] = {}
        self._plots: dict[int, list[WordPlot]] = {}  # page index -> its plots drawn with words

    def first_pass(self, page: pdfium.PdfPage, index: int) -> list[TextLine]:
        """The page's lines in reading order, kept (unordered) for ``second_pass`` while the budget lasts."""
        lines = self.read(page, index)
        chars = sum(len(line.chars) for line in lines)
        if chars <= self._budget:
            self._budget -= chars
            self._kept[index] = lines
        return order_lines(lines)

    def forget(self, index: int) -> None:
        """A page that is not read from its text layer (a scan to OCR) needs no kept lines."""
        self._kept.pop(index, None)
        self._plots.pop(index, None)

    def plots(self, index: int) -> list[WordPlot]:
        """The plots drawn with words found when the page was last read (handed over once)."""
        return self._plots.pop(index, [])

    def second_pass(self, page: pdfium.PdfPage, index: int, obstacles: Sequence[BBox]) -> list[TextLine]:
        """The page's lines in reading order, any drawn in a font without a usable Unicode map read by OCR."""
        kept = self._kept.pop(index, None)
        lines = kept if kept is not None else self.read(page, index)
        fonts = noise_fonts(lines)
        engine = self._ocr(1) if self._ocr is not None and self._ocr_lines_left and fonts else None
        render = (lambda box: render_region(page, box, GARBLED_DPI)) if engine is not None else None
        recognize = engine.recognize if engine is not None else None
        lines, read = read_garbled(lines, render, recognize, min(MAX_LINES_PER_PAGE, self._ocr_lines_left), fonts)
        self._ocr_lines_left -= read
        return order_lines(lines, obstacles)

    def read(self, page: pdfium.PdfPage, index: int) -> list[TextLine]:
        textpage = page.get_textpage()
        try:
            self.limits.check_text(textpage, index)  # before lines are built: ~300 bytes per character
            lines, plots = split_word_plots(raw_lines(textpage))
        finally:
            textpage.close()
        if plots:
            self._plots[index] = plots
        else:
            self._plots.pop(index, None)
        return lines
