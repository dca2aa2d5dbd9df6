"""The registry beside the vectors: a knowledge base written before a column existed still opens."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from backend.knowledge_bases.registry import Registry
from backend.types import Figure

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
