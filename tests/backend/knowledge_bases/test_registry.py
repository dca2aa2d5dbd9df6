"""The registry beside the vectors: a knowledge base written before a column existed still opens; a page of
its document list is filtered, sorted and paged in SQL."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from backend.errors import KnowledgeBaseError
from backend.knowledge_bases.registry import MAX_FILTER_CHARS, MAX_PAGE_ROWS, DocumentFilterTooLong, Registry
from backend.types import DocumentInfo, DocumentPage, Figure

_OLD_SCHEMA = """
CREATE TABLE documents (
    doc_id TEXT PRIMARY KEY, file TEXT NOT NULL, sha256 TEXT NOT NULL, pages INTEGER DEFAULT 0,
    ocr_pages INTEGER DEFAULT 0, chunks INTEGER DEFAULT 0, figures INTEGER DEFAULT 0,
    status TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE figures (
    id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, page INTEGER NOT NULL, path TEXT NOT NULL,
    caption TEXT DEFAULT '');
INSERT INTO documents VALUES ('d1', 'old.pdf', 'sha', 2, 0, 3, 1, 'complete', 0);
INSERT INTO figures VALUES ('d1/p2_fig1', 'd1', 2, 'figures/d1/p2_fig1.png', 'Figure 1: old');
"""


def test_figures_of_a_knowledge_base_without_context_columns_still_open(tmp_path: Path) -> None:
    folder = tmp_path / "kb"
    folder.mkdir()
    conn = sqlite3.connect(folder / "registry.sqlite3")
    conn.executescript(_OLD_SCHEMA)
    conn.close()
    registry = Registry(folder)
    [old] = registry.figures()
    assert (old.id, old.caption, old.context, old.text) == ("d1/p2_fig1", "Figure 1: old", "", "")
    new = Figure(
        "d1/p2_fig2", "d1", "old.pdf", 2, str(folder / "figures/d1/p2_fig2.png"), "图2", "词 语", "如下图所示："
    )
    registry.add_figure(new)
    assert registry.figures()[1] == new
    assert Registry(folder).figures()[1] == new  # opened again: nothing added twice


def library(count: int) -> list[DocumentInfo]:
    return [
        DocumentInfo(
            doc_id=f"{i:032x}",
            file=f"paper_{i:05d}.pdf" if i % 7 else f"Report {i} 100%_done.pdf",
            sha256=f"{i:064x}",
            pages=i % 40 + 1,
            ocr_pages=0,
            chunks=(i * 37) % 500,
            figures=0,
            status="complete" if i % 11 else "pending",
            created_at=1_700_000_000 + i,
            bytes=(i * 7919) % 100_000,
        )
        for i in range(count)
    ]


def test_a_page_of_documents_is_filtered_sorted_and_kept_in_range(tmp_path: Path) -> None:
    registry = Registry(tmp_path / "kb")
    docs = library(3000)
    registry.add_documents(docs)
    first = registry.documents_page(DocumentPage(limit=20))
    assert first.total == 3000 and [d.file for d in first.rows] == sorted((d.file for d in docs), key=str.lower)[:20]
    for sort, key in (("chunks", "chunks"), ("size", "bytes"), ("added", "created_at"), ("pages", "pages")):
        page = registry.documents_page(DocumentPage(sort=sort, descending=True, limit=5))
        assert [getattr(d, key) for d in page.rows] == sorted((getattr(d, key) for d in docs), reverse=True)[:5]
    pending = registry.documents_page(DocumentPage(sort="status", descending=True, limit=200))
    assert {d.status for d in pending.rows} == {"pending"}
    # % and _ are what they are typed as, not wildcards; any case
    reports = registry.documents_page(DocumentPage(contains="100%_DONE", limit=200))
    assert reports.total == len([d for d in docs if d.file.startswith("Report")]) == 429
    assert registry.documents_page(DocumentPage(contains="%")).total == 429
    last = registry.documents_page(DocumentPage(contains="paper_0", offset=99_999, limit=50))
    assert last.offset == (last.total - 1) // 50 * 50 and 0 < len(last.rows) <= 50
    assert registry.documents_page(DocumentPage(contains="no such name")).rows == []


def test_a_page_of_documents_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    registry = Registry(tmp_path / "kb")
    with pytest.raises(KnowledgeBaseError, match="cannot be sorted by 'file; DROP TABLE documents'"):
        registry.documents_page(DocumentPage(sort="file; DROP TABLE documents"))
    with pytest.raises(DocumentFilterTooLong):
        registry.documents_page(DocumentPage(contains="x" * (MAX_FILTER_CHARS + 1)))
    assert registry.documents_page(DocumentPage(limit=10**6)).limit == MAX_PAGE_ROWS


def test_what_every_question_reads_follows_any_writer(tmp_path: Path) -> None:
    """pending_ids and totals are kept between questions, and read again after a commit by this registry
    or by another connection (another process's ingest)."""
    registry = Registry(tmp_path / "kb")
    registry.add_documents([replace(d, status="pending") for d in library(3)])
    assert (registry.totals(), len(registry.pending_ids())) == ((0, 0), 3)
    doc = registry.documents()[0]
    registry.mark_complete(doc.doc_id, pages=2, ocr_pages=0, chunks=5, figures=0)
    assert (registry.totals(), len(registry.pending_ids())) == ((1, 5), 2)
    Registry(tmp_path / "kb").mark_complete(registry.pending_ids()[0], pages=1, ocr_pages=0, chunks=4, figures=0)
    assert (registry.totals(), len(registry.pending_ids())) == ((2, 9), 1)
    with sqlite3.connect(registry.path) as other:
        other.execute("UPDATE documents SET status='complete', chunks=1 WHERE status='pending'")
    assert (registry.totals(), registry.pending_ids()) == ((3, 10), [])
