"""A native page's text lines read once for both passes over a document.

The first pass (running headers, scanned pages) and the second (the page's text) need the same glyphs;
reading them is most of the cost of parsing a native page, so the first pass keeps its lines, up to a
budget, for the second to order again with the page's images as obstacles.
"""

from __future__ import annotations

from typing import Optional, Sequence

import pypdfium2 as pdfium

from backend.documents.layout import BBox, TextLine, order_lines, raw_lines
from backend.documents.limits import PageLimits

KEPT_CHARS = 200_000  # glyphs kept between the passes per document: ~50 MB, some 50 pages of a paper


class PageLines:
    """Reads a page's lines (after the page's character limit is checked); keeps the first pass's."""

    def __init__(self, limits: PageLimits, kept_chars: Optional[int] = None) -> None:
        self.limits = limits
        self._budget = KEPT_CHARS if kept_chars is None else kept_chars
        self._kept: dict[int, list[TextLine]] = {}

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

    def second_pass(self, page: pdfium.PdfPage, index: int, obstacles: Sequence[BBox]) -> list[TextLine]:
        kept = self._kept.pop(index, None)
        return order_lines(kept if kept is not None else self.read(page, index), obstacles)

    def read(self, page: pdfium.PdfPage, index: int) -> list[TextLine]:
        textpage = page.get_textpage()
        try:
            self.limits.check_text(page, textpage, index)  # before lines are built: ~300 bytes per character
            return raw_lines(textpage)
        finally:
            textpage.close()
