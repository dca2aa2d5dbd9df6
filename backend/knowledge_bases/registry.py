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
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from backend.errors import KnowledgeBaseDeleted, KnowledgeBaseError
from backend.types import MAX_FILTER_CHARS, DocumentInfo, DocumentPage, Figure

PENDING = "pending"
COMPLETE = "complete"
REMOVING = "removing"  # being deleted: like pending, start-up finishes the job after a crash
TRASHED = "trashed"  # deleted by a user: rows and files kept, hidden from search and lists until restored

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY, file TEXT NOT NULL, sha256 TEXT NOT NULL, pages INTEGER DEFAULT 0,
    ocr_pages INTEGER DEFAULT 0, chunks INTEGER DEFAULT 0, figures INTEGER DEFAULT 0,
    status TEXT NOT NULL, created_at REAL NOT NULL, bytes INTEGER DEFAULT 0);
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
_ADDED_COLUMNS = {
    "figures": ("context TEXT DEFAULT ''", "text TEXT DEFAULT ''"),
    "documents": (
        "trash_id TEXT DEFAULT ''",
        "trashed_at REAL DEFAULT 0",
        "trashed_by TEXT DEFAULT ''",
        "bytes INTEGER DEFAULT 0",
    ),
}
# what a page of the document list may be sorted by (DOCUMENT_SORTS), as SQL: never the caller's text
_SORT_COLUMNS = {
    "file": "file COLLATE NOCASE",
    "pages": "pages",
    "chunks": "chunks",
    "size": "bytes",
    "added": "created_at",
    "status": "status",
}
MAX_PAGE_ROWS = 200


class DocumentFilterTooLong(KnowledgeBaseError):
    """A filter of the document list longer than MAX_FILTER_CHARS."""


class Registry:
    def __init__(self, folder: Path):
        self.folder = folder
        self.path = folder / "registry.sqlite3"
        self._lock = threading.Lock()
        self._watch: Optional[sqlite3.Connection] = None  # only asks PRAGMA data_version
        self._memos: dict[str, tuple[int, Any]] = {}  # what every question reads, by version()
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

    def version(self) -> int:
        """A number that changes whenever anyone (this process or another) commits to the registry: what
        a question's lookups are cached by (a question reads them for every knowledge base it asks)."""
        with self._lock:
            if not self.path.exists():
                raise KnowledgeBaseDeleted("the knowledge base was deleted")
            if self._watch is None:
                self._watch = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
            return int(self._watch.execute("PRAGMA data_version").fetchone()[0])

    def _memo(self, name: str, read: Callable[[], Any]) -> Any:
        """``read()``'s answer, read again only after the registry changed."""
        version = self.version()  # before the read: a commit in between only makes the next call read again
        known = self._memos.get(name)
        if known is None or known[0] != version:
            known = self._memos[name] = (version, read())
        return known[1]

    # -- documents ----------------------------------------------------------------------------

    def add_pending(self, doc_id: str, file: str, sha256: str) -> None:
        with self._db() as db:
            db.execute(
                "INSERT OR REPLACE INTO documents(doc_id, file, sha256, status, created_at) VALUES (?, ?, ?, ?, ?)",
                (doc_id, file, sha256, PENDING, time.time()),
            )

    def add_documents(self, docs: list[DocumentInfo]) -> None:
        """Entries written at once, in one transaction (a library brought in whole: 10,000 one by one
        take about a minute of commits)."""
        with self._db() as db:
            db.executemany(
                "INSERT OR REPLACE INTO documents(doc_id, file, sha256, pages, ocr_pages, chunks, figures, status,"
                " created_at, bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        d.doc_id,
                        d.file,
                        d.sha256,
                        d.pages,
                        d.ocr_pages,
                        d.chunks,
                        d.figures,
                        d.status,
                        d.created_at,
                        d.bytes,
                    )
                    for d in docs
                ],
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
        """Of one status, or every one not in the trash."""
        where = " WHERE status=?" if status else " WHERE status!=?"
        with self._db() as db:
            rows = db.execute("SELECT * FROM documents" + where + " ORDER BY file", (status or TRASHED,)).fetchall()
        return [_document(r) for r in rows]

    def documents_page(self, asked: DocumentPage) -> DocumentPage:
        """One page of the documents whose file name contains ``asked.contains`` (any case), sorted by
        ``asked.sort`` then by name; an offset past the end gives the last page."""
        column = _SORT_COLUMNS.get(asked.sort)
        if column is None:
            raise KnowledgeBaseError(f"documents cannot be sorted by '{asked.sort}'")
        if len(asked.contains) > MAX_FILTER_CHARS:
            raise DocumentFilterTooLong(f"the document filter is longer than {MAX_FILTER_CHARS} characters")
        limit = max(1, min(int(asked.limit), MAX_PAGE_ROWS))
        pattern = "%" + _like_literal(asked.contains.strip()) + "%"
        where = "WHERE file LIKE ? ESCAPE '\\' AND status!=?"  # the trash has its own list
        order = f"{column} {'DESC' if asked.descending else 'ASC'}, file COLLATE NOCASE, doc_id"  # both constants
        with self._db() as db:
            total = int(db.execute(f"SELECT COUNT(*) FROM documents {where}", (pattern, TRASHED)).fetchone()[0])
            offset = min(max(0, int(asked.offset)), max(0, (total - 1) // limit * limit))
            rows = db.execute(
                f"SELECT * FROM documents {where} ORDER BY {order} LIMIT ? OFFSET ?", (pattern, TRASHED, limit, offset)
            ).fetchall()
        return replace(asked, limit=limit, offset=offset, rows=[_document(r) for r in rows], total=total, originals={})

    def set_size(self, doc_id: str, size: int) -> None:
        with self._db() as db:
            db.execute("UPDATE documents SET bytes=? WHERE doc_id=?", (size, doc_id))

    def document_by_file(self, file: str) -> Optional[DocumentInfo]:
        """Not one in the trash: its name is free for a new upload (its restore then refuses to clobber)."""
        with self._db() as db:
            row = db.execute(
                "SELECT * FROM documents WHERE file=? AND status!=? ORDER BY status='complete' DESC LIMIT 1",
                (file, TRASHED),
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
        """Every document a search leaves out: not complete yet, being removed, or in the trash."""
        return list(self._memo("pending", self._read_pending_ids))

    def _read_pending_ids(self) -> list[str]:
        with self._db() as db:
            return [r[0] for r in db.execute("SELECT doc_id FROM documents WHERE status!=?", (COMPLETE,))]

    def unfinished_ids(self) -> list[str]:
        """What a crash left half-done (start-up removes them); never a document in the trash."""
        with self._db() as db:
            return [
                r[0] for r in db.execute("SELECT doc_id FROM documents WHERE status IN (?, ?)", (PENDING, REMOVING))
            ]

    # -- the trash ----------------------------------------------------------------------------

    def trash_document(self, doc_id: str, trash_id: str, when: float, who: str) -> bool:
        """One update, so a crash leaves it either complete or in the trash. False: it was not complete."""
        with self._db() as db:
            changed = db.execute(
                "UPDATE documents SET status=?, trash_id=?, trashed_at=?, trashed_by=? WHERE doc_id=? AND status=?",
                (TRASHED, trash_id, when, who, doc_id, COMPLETE),
            ).rowcount
        return changed == 1

    def restore_document(self, doc_id: str) -> bool:
        with self._db() as db:
            changed = db.execute(
                "UPDATE documents SET status=?, trash_id='', trashed_at=0, trashed_by='' WHERE doc_id=? AND status=?",
                (COMPLETE, doc_id, TRASHED),
            ).rowcount
        return changed == 1

    def trashed(self) -> list[tuple[DocumentInfo, str, float, str]]:
        """Each document in the trash with its trash id, when and by whom it was deleted."""
        with self._db() as db:
            rows = db.execute("SELECT * FROM documents WHERE status=? ORDER BY trashed_at", (TRASHED,)).fetchall()
        return [(_document(r), r["trash_id"], r["trashed_at"], r["trashed_by"]) for r in rows]

    def totals(self) -> tuple[int, int]:
        """(complete documents, their chunks)."""
        return self._memo("totals", self._read_totals)

    def _read_totals(self) -> tuple[int, int]:
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
        bytes=row["bytes"] or 0,
    )


def _like_literal(value: str) -> str:
    """``value`` matched as typed inside a LIKE pattern (ESCAPE '\\'): % and _ are not wildcards."""
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
