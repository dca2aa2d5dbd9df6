"""Which pages are scans, told without OCR."""

from __future__ import annotations

from backend.documents.scanned import has_scanned_pages, scanned_pages
from tests.conftest import BENCH, SAMPLES

LAYOUT = SAMPLES / "layout"


def test_has_scanned_pages_tells_without_ocr():
    assert has_scanned_pages(LAYOUT / "mixed_native_scanned_20p.pdf")  # pages 4 and 12 of 20
    assert has_scanned_pages(BENCH / "dev-zh" / "docs" / "zh_003.pdf")
    assert not has_scanned_pages(LAYOUT / "native_zh_en_20p.pdf")
    assert not has_scanned_pages(SAMPLES / "物理公式示例文档.pdf")  # figures, but text on every page


def test_scanned_pages_lists_every_page_the_parser_will_ocr():
    assert scanned_pages(LAYOUT / "mixed_native_scanned_20p.pdf") == [3, 11]
    assert scanned_pages(LAYOUT / "native_zh_en_20p.pdf") == []
