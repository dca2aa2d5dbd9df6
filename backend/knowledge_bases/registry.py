"""Per-knowledge-base bookkeeping beside the vectors: documents, their pages, figures and summaries.

One SQLite file inside the knowledge base's folder (named by the collection, never by the display
name). A document is ``pending`` while its chunks are being stored and becomes ``complete`` only
after all of them are in; searches leave pending documents out, and start-up removes leftovers.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

from backend.errors import KnowledgeBaseDeleted
from backend.types import DocumentInfo, Figure

PENDING = "pending"
COMPLETE = "complete"
REMOVING = "removing"  # being deleted: like pending, start-up finishes the job after a crash

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY, file TEXT NOT NULL, sha256 TEXT NOT NULL, pages INTEGER DEFAULT 0,
    ocr_pages INTEGER DEFAULT 0, chunks INTEGER DEFAULT 0, figures INTEGER DEFAULT 0,
    status TEXT NOT NULL, created_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS documents_file ON documents(file);
CREATE TABLE IF NOT EXISTS pages (
    doc_id TEXT NOT NULL, page INTEGER NOT NULL, text TEXT NOT NULL, ocr INTEGER DEFAULT 0,
    PRIMARY KEY (doc_id, page));
CREATE TABLE IF NOT EXISTS figures (
    id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, page INTEGER NOT NULL, path TEXT NOT NULL,
    caption TEXT DEFAULT '', context TEXT DEFAULT '', text TEXT DEFAULT '');
CREATE TABLE IF NOT EXISTS summaries (doc_id TEXT PRIMARY KEY, text TEXT NOT NULL, created_at REAL NOT NULL);
"""
# columns added since a knowledge base was first written: added when an older one is opened
_ADDED_COLUMNS = {"figures": ("context TEXT DEFAULT ''", "text TEXT DEFAULT ''")}


class Registry:
    def __init__(self, folder: Path):
        self.folder = folder
        self.path = folder / "registry.sqlite3"
        self._lock = threading.Lock()
        folder.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=30)  # creates the file: _db only opens an existing one
        try:
            conn.executescript(_SCHEMA)
            _add_missing_columns(conn)
        finally:
            conn.close()

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        # A short-lived connection per call: Gradio runs handlers on many threads.
        with self._lock:
            if not self.path.exists():  # the folder went with its knowledge base: say so, never re-create it
                raise KnowledgeBaseDeleted("the knowledge base was deleted")
            conn = sqlite3.connect(self.path, timeout=30)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.row_factory = sqlite3.Row
                yield conn
                conn.commit()
            except sqlite3.OperationalError:
                if not self.path.exists():  # removed while in use
                    raise KnowledgeBaseDeleted("the knowledge base was deleted") from None
                raise
            finally:
                conn.close()

    # -- documents ----------------------------------------------------------------------------

    def add_pending(self, doc_id: str, file: str, sha256: str) -> None:
        with self._db() as db:
            db.execute(
                "INSERT OR REPLACE INTO documents(doc_id, file, sha256, status, created_at) VALUES (?, ?, ?, ?, ?)",
                (doc_id, file, sha256, PENDING, time.time()),
            )

    def mark_complete(self, doc_id: str, pages: int, ocr_pages: int, chunks: int, figures: int) -> None:
        with self._db() as db:
            db.execute(
                "UPDATE documents SET status=?, pages=?, ocr_pages=?, chunks=?, figures=? WHERE doc_id=?",
                (COMPLETE, pages, ocr_pages, chunks, figures, doc_id),
            )

    def rename_document(self, doc_id: str, file: str) -> None:
        with self._db() as db:
            db.execute("UPDATE documents SET file=? WHERE doc_id=?", (file, doc_id))

    def mark_removing(self, doc_id: str) -> None:
        with self._db() as db:
            db.execute("UPDATE documents SET status=? WHERE doc_id=?", (REMOVING, doc_id))

    def remove_document(self, doc_id: str) -> None:
        with self._db() as db:
            for table in ("documents", "pages", "figures", "summaries"):
                db.execute(f"DELETE FROM {table} WHERE doc_id=?", (doc_id,))  # table names are constants

    def documents(self, status: Optional[str] = None) -> list[DocumentInfo]:
        query = "SELECT * FROM documents" + (" WHERE status=?" if status else "") + " ORDER BY file"
        with self._db() as db:
            rows = db.execute(query, (status,) if status else ()).fetchall()
        return [_document(r) for r in rows]

    def document_by_file(self, file: str) -> Optional[DocumentInfo]:
        with self._db() as db:
            row = db.execute(
                "SELECT * FROM documents WHERE file=? ORDER BY status='complete' DESC LIMIT 1", (file,)
            ).fetchone()
        return _document(row) if row else None

    def has_file(self, file: str) -> bool:
        return self.document_by_file(file) is not None

    def document_by_sha(self, sha256: str) -> Optional[DocumentInfo]:
        with self._db() as db:
            row = db.execute("SELECT * FROM documents WHERE sha256=? AND status=?", (sha256, COMPLETE)).fetchone()
        return _document(row) if row else None

    def document(self, doc_id: str) -> Optional[DocumentInfo]:
        with self._db() as db:
            row = db.execute("SELECT * FROM documents WHERE doc_id=?", (doc_id,)).fetchone()
        return _document(row) if row else None

    def pending_ids(self) -> list[str]:
        with self._db() as db:
            return [r[0] for r in db.execute("SELECT doc_id FROM documents WHERE status!=?", (COMPLETE,))]

    def totals(self) -> tuple[int, int]:
        """(complete documents, their chunks)."""
        with self._db() as db:
            row = db.execute(
                "SELECT COUNT(*), COALESCE(SUM(chunks), 0) FROM documents WHERE status=?", (COMPLETE,)
            ).fetchone()
        return int(row[0]), int(row[1])

    # -- pages --------------------------------------------------------------------------------

    def add_pages(self, doc_id: str, pages: list[tuple[int, str, bool]]) -> None:
        with self._db() as db:
            db.executemany(
                "INSERT OR REPLACE INTO pages(doc_id, page, text, ocr) VALUES (?, ?, ?, ?)",
                [(doc_id, p, t, int(o)) for p, t, o in pages],
            )

    def page_text(self, doc_id: str, page: int) -> str:
        with self._db() as db:
            row = db.execute("SELECT text FROM pages WHERE doc_id=? AND page=?", (doc_id, page)).fetchone()
        return row[0] if row else ""

    def first_pages(self) -> dict[str, str]:
        """Page 1 of every document in one query (a connection per document took 15 s at 1,500)."""
        with self._db() as db:
            return {r[0]: r[1] for r in db.execute("SELECT doc_id, text FROM pages WHERE page=1")}

    def document_text(self, doc_id: str) -> list[tuple[int, str]]:
        with self._db() as db:
            return [
                (r[0], r[1]) for r in db.execute("SELECT page, text FROM pages WHERE doc_id=? ORDER BY page", (doc_id,))
            ]

    # -- figures ------------------------------------------------------------------------------

    def add_figure(self, figure: Figure) -> None:
        relative = str(Path(figure.path).relative_to(self.folder))
        with self._db() as db:
            db.execute(
                "INSERT OR REPLACE INTO figures(id, doc_id, page, path, caption, context, text)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (figure.id, figure.doc_id, figure.page, relative, figure.caption, figure.context, figure.text),
            )

    def figures(self, doc_id: Optional[str] = None, complete_only: bool = True) -> list[Figure]:
        query = (
            "SELECT f.*, d.file FROM figures f JOIN documents d ON d.doc_id = f.doc_id WHERE 1=1"
            + (" AND d.status='complete'" if complete_only else "")
            + (" AND f.doc_id=?" if doc_id else "")
            + " ORDER BY d.file, f.page, f.id"
        )
        with self._db() as db:
            rows = db.execute(query, (doc_id,) if doc_id else ()).fetchall()
        return [
            Figure(
                id=r["id"],
                doc_id=r["doc_id"],
                file=r["file"],
                page=r["page"],
                path=str(self.folder / r["path"]),
                caption=r["caption"] or "",
                text=r["text"] or "",
                context=r["context"] or "",
            )
            for r in rows
        ]

    # -- summaries ----------------------------------------------------------------------------

    def summary(self, doc_id: str) -> Optional[str]:
        with self._db() as db:
            row = db.execute("SELECT text FROM summaries WHERE doc_id=?", (doc_id,)).fetchone()
        return row[0] if row else None

    def save_summary(self, doc_id: str, text: str) -> None:
        with self._db() as db:
            db.execute(
                "INSERT OR REPLACE INTO summaries(doc_id, text, created_at) VALUES (?, ?, ?)",
                (doc_id, text, time.time()),
            )


def _add_missing_columns(conn: sqlite3.Connection) -> None:
    """A knowledge base written before a column existed gets it (empty), so it opens as it was."""
    for table, columns in _ADDED_COLUMNS.items():
        present = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        for column in columns:
            if column.split()[0] not in present:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
    conn.commit()


def _document(row: sqlite3.Row) -> DocumentInfo:
    return DocumentInfo(
        doc_id=row["doc_id"],
        file=row["file"],
        sha256=row["sha256"],
        pages=row["pages"],
        ocr_pages=row["ocr_pages"],
        chunks=row["chunks"],
        figures=row["figures"],
        status=row["status"],
        created_at=row["created_at"],
    )
