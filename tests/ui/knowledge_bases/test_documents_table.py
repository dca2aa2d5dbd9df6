"""What the documents table shows (ui/knowledge_bases/documents_table.py): sizes and where the page is."""

from __future__ import annotations

from backend.types import DocumentInfo, DocumentPage
from ui.knowledge_bases.documents_table import file_size, page_label


def test_sizes_and_the_page_line() -> None:
    assert [file_size(n) for n in (0, 512, 2048, 5 * 1024 * 1024)] == ["–", "512 B", "2.0 KB", "5.0 MB"]
    row = DocumentInfo("d", "a.pdf", "s", 1, 0, 1, 0, "complete")
    page = DocumentPage(offset=20, limit=20, rows=[row] * 20, total=10_000)
    assert page_label(page, "en") == "Documents · 21–40 of 10,000"
    assert page_label(DocumentPage(contains="zz"), "en") == "Documents · no name matches the filter"
    assert "共 10,000 个" in page_label(page, "zh")
