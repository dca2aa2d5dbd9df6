"""A native page's glyphs are read once for both passes over a document (backend/documents/page_lines.py)."""

from __future__ import annotations

import pypdfium2 as pdfium

from backend.documents.figures import image_boxes
from backend.documents.limits import PageLimits
from backend.documents.page_lines import PageLines
from backend.documents.pdf import _obstacles, parse_pdf
from backend.settings import IngestSettings
from tests.conftest import SHARED, make_settings

TWO_COLUMNS = SHARED / "real" / "pypdf-samples" / "026-latex-multicolumn_multicolumn.pdf"


def _texts(lines) -> list[str]:
    return [line.text for line in lines]


def test_the_second_pass_orders_the_kept_lines_as_a_fresh_reading_would():
    pdf = pdfium.PdfDocument(str(TWO_COLUMNS))
    try:
        page = pdf[0]
        obstacles = _obstacles(page, image_boxes(page))
        kept = PageLines(PageLimits(TWO_COLUMNS.name, IngestSettings()))
        fresh = PageLines(PageLimits(TWO_COLUMNS.name, IngestSettings()), kept_chars=0)
        assert _texts(kept.first_pass(page, 0)) == _texts(fresh.first_pass(page, 0))
        assert kept._kept and not fresh._kept  # the budget decides what is kept
        assert _texts(kept.second_pass(page, 0, obstacles)) == _texts(fresh.second_pass(page, 0, obstacles))
        assert not kept._kept  # handed over once, then gone
    finally:
        pdf.close()


def test_a_document_reads_the_same_with_and_without_kept_lines(tmp_path, monkeypatch):
    import backend.documents.page_lines as page_lines

    settings = make_settings(tmp_path / "data")
    with_kept = [p.text for p in parse_pdf(TWO_COLUMNS, settings)]
    monkeypatch.setattr(page_lines, "KEPT_CHARS", 0)  # every page read twice, as before
    assert [p.text for p in parse_pdf(TWO_COLUMNS, settings)] == with_kept
