"""A knowledge base opened for work: its names, collection, folder, registry and documents.

It does the bookkeeping of its documents once (its folder layout, the registry entry of each document,
adding and removing them); the store only stores and deletes rows, and the ingestor only turns files
into rows. Folder layout::

    kbs/kb_<hex>/registry.sqlite3       documents, pages, figures, summaries
    kbs/kb_<hex>/files/<doc_id>.pdf     the original, by content hash (page previews are rendered from it)
    kbs/kb_<hex>/figures/<doc_id>/      figure PNGs
    kbs/kb_<hex>/previews/<doc_id>/     rendered pages (a cache)
    kbs/kb_<hex>/parsed/<doc_id>.jsonl  the pages of a pending document parsed so far (ingestion.checkpoint)
    kbs/kb_<hex>/parsed/<doc_id>.pdf    an interrupted upload's original, ``.name`` its file name (resumed)
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

from backend.errors import DocLensError, KnowledgeBaseError
from backend.knowledge_bases import names
from backend.knowledge_bases.registry import Registry
from backend.store.base import ChunkRow, CollectionInfo, VectorStore
from backend.types import DocumentInfo, DocumentPage, Figure, PageText

log = logging.getLogger(__name__)
PARSED_KEPT_DAYS = 7  # an interrupted upload's parsed pages wait this long for the same file to come back
RENAME_BATCH = 512  # rows read back with their vectors and rewritten at a time (a filter of this many ids)


@dataclass
class OpenKB:
    """A knowledge base ready for work: its names, its collection info, its registry and its documents."""

    name: str
    collection: str
    folder: Path
    info: CollectionInfo
    registry: Registry
    store: VectorStore
    deleted: threading.Event = field(default_factory=threading.Event)  # set when a delete begins

    # -- its folder ---------------------------------------------------------------------------

    def original_pdf(self, doc_id: str) -> Path:
        return self.folder / "files" / f"{doc_id}.pdf"

    def figure_dir(self, doc_id: str) -> Path:
        return self.folder / "figures" / doc_id

    def preview_dir(self, doc_id: str) -> Path:
        return self.folder / "previews" / doc_id

    def parsed_pages(self, doc_id: str) -> Path:
        return self.folder / "parsed" / f"{doc_id}.jsonl"

    def interrupted_original(self, doc_id: str) -> Path:
        return self.folder / "parsed" / f"{doc_id}.pdf"

    def interrupted_uploads(self) -> list[tuple[Path, str]]:
        """The originals of uploads a kill or shutdown cut short, with their file names: each resumes after
        the pages it had parsed (``ingestion.resume``)."""
        kept = sorted(self.folder.glob("parsed/*.pdf"))  # none when the folder is not there
        named = [(pdf, pdf.with_suffix(".name")) for pdf in kept if pdf.with_suffix(".jsonl").is_file()]
        return [(pdf, name.read_text(encoding="utf-8").strip() or pdf.name) for pdf, name in named if name.is_file()]

    # -- its documents ------------------------------------------------------------------------

    def find_document(self, file: str) -> DocumentInfo:
        """A document by the name the user knows (as given, or as stored: a long one is shortened)."""
        doc = self.registry.document_by_file(file) or self.registry.document_by_file(names.clean_file_name(file))
        if doc is None:
            raise KnowledgeBaseError(f"document '{file}' is not in knowledge base '{self.name}'")
        return doc

    def kept_original(self, file: str) -> tuple[DocumentInfo, Path]:
        """A document and its stored PDF; DocLensError when the original is not kept."""
        doc = self.find_document(file)
        pdf = self.original_pdf(doc.doc_id)
        if not pdf.exists():
            raise DocLensError(f"{doc.file}: the original PDF is not kept for this document; upload it again")
        return doc, pdf

    def documents_page(self, asked: DocumentPage) -> DocumentPage:
        """A page of the document list with the stored original of each row that has one (a document
        registered before sizes were kept gets its size from that file)."""
        page = self.registry.documents_page(asked)
        for doc in page.rows:
            pdf = self.original_pdf(doc.doc_id)
            if pdf.is_file():
                page.originals[doc.doc_id] = str(pdf)
                doc.bytes = doc.bytes or pdf.stat().st_size
        return page

    def figure(self, figure_id: str) -> Figure:
        figure = next((f for f in self.registry.figures() if f.id == figure_id), None)
        if figure is None:
            raise KnowledgeBaseError(f"figure '{figure_id}' is not in knowledge base '{self.name}'")
        return figure

    def figure_image(self, figure: Figure) -> Optional[bytes]:
        """The figure's PNG, or None when it cannot be read (the question then goes without the image)."""
        try:
            return Path(figure.path).read_bytes()
        except OSError as exc:
            log.warning("figure image %s unreadable: %s", figure.path, exc)
            return None

    def text(self, doc_id: str) -> str:
        """A document's whole text, its pages apart by blank lines."""
        return "\n\n".join(text for _, text in self.registry.document_text(doc_id))

    def first_passages(self, doc_id: str, count: int) -> list[str]:
        return [c.content for c in self.store.chunks(self.collection, doc_id=doc_id, limit=count)]

    def begin_document(self, doc_id: str, file: str, sha256: str) -> None:
        """Registered as pending before its first row or file is written: until ``complete_document`` it
        is searched by no one and removed by ``remove_document`` (or at start after a crash)."""
        if self.registry.document(doc_id) is not None:  # rows and files only exist under an entry
            self.remove_document(doc_id)  # leftovers of an earlier attempt at the same content
        self.registry.add_pending(doc_id, file, sha256)

    def keep_original(self, doc_id: str, source: Path) -> None:
        """The PDF is kept (by content hash, never by its name) to render page previews later."""
        target = self.original_pdf(doc_id)
        target.parent.mkdir(exist_ok=True)  # inside the knowledge base's folder, never re-created here
        partial = target.with_suffix(".part")
        shutil.copyfile(source, partial)
        partial.replace(target)
        self.registry.set_size(doc_id, target.stat().st_size)

    def add_rows(self, rows: Sequence[ChunkRow]) -> None:
        self.store.insert(self.collection, list(rows))

    def remove_rows(self, doc_ids: Sequence[str]) -> None:
        """The rows of pending documents, which stay registered (their rows are written again)."""
        self.store.delete_documents(self.collection, doc_ids)

    def complete_document(
        self,
        doc_id: str,
        pages: Sequence[PageText],
        figures: Sequence[Figure],
        chunks: int,
        page_count: int,
        check: Callable[[], None],
    ) -> None:
        """Its pages and figures are registered, then (``check`` passing: not cancelled, not deleted)
        it is marked complete, the one step that makes it visible."""
        self.registry.add_pages(doc_id, [(p.page, p.text, p.ocr) for p in pages])
        for figure in figures:
            self.registry.add_figure(figure)
        check()
        self.registry.mark_complete(
            doc_id, pages=page_count, ocr_pages=sum(p.ocr for p in pages), chunks=chunks, figures=len(figures)
        )

    def rename_document(self, doc_id: str, file: str) -> None:
        """A new name for a stored document, its vectors kept (nothing is embedded again). The rows are
        rewritten first, the registry entry last: a crash in between leaves the old name, and renaming
        again rewrites the same rows (their figures follow the entry: they are joined to it by doc_id)."""
        rows = self.store.chunks(self.collection, doc_id=doc_id)
        for start in range(0, len(rows), RENAME_BATCH):
            batch = rows[start : start + RENAME_BATCH]
            vectors = self.store.vectors(self.collection, [r.id for r in batch])
            for row in batch:
                row.filename, row.vector = file, vectors[row.id]
            self.store.upsert(self.collection, batch)
        self.registry.rename_document(doc_id, file)

    def remove_document(self, doc_id: str) -> None:
        """Rows first, then files, then the registry entry: a crash in between is cleaned up at start.

        The entry is marked first so that a crash half-way never leaves a "complete" document without rows
        (e.g. the old version during a replace): start-up removes whatever is not complete.
        """
        self._remove(doc_id, keep_parsed=False)

    def interrupt_document(self, doc_id: str) -> None:
        """A pending document a crash cut short: it is removed as by ``remove_document``, except the pages
        parsed so far and their figures, which the same file's next upload resumes from."""
        self._remove(doc_id, keep_parsed=True)

    def _remove(self, doc_id: str, keep_parsed: bool) -> None:
        self.registry.mark_removing(doc_id)
        self.store.delete_documents(self.collection, [doc_id])
        if keep_parsed and self.parsed_pages(doc_id).is_file():
            self._keep_for_resuming(doc_id)
        else:
            self.forget_parsed(doc_id, figures=True)
        shutil.rmtree(self.preview_dir(doc_id), ignore_errors=True)
        self.original_pdf(doc_id).unlink(missing_ok=True)
        self.registry.remove_document(doc_id)

    def _keep_for_resuming(self, doc_id: str) -> None:
        """The original goes beside its parsed pages, with its name: the next start resumes the upload."""
        original, doc = self.original_pdf(doc_id), self.registry.document(doc_id)
        if doc is None or not original.is_file():
            return
        self.interrupted_original(doc_id).with_suffix(".name").write_text(doc.file, encoding="utf-8")
        original.replace(self.interrupted_original(doc_id))

    def forget_parsed(self, doc_id: str, figures: bool = False) -> None:
        """An interrupted upload's pages and original, and its figures when ``figures`` or the document is
        neither stored nor in the trash."""
        if figures or self.registry.document(doc_id) is None:
            shutil.rmtree(self.figure_dir(doc_id), ignore_errors=True)
        for kept in (self.parsed_pages(doc_id), self.interrupted_original(doc_id)):
            for path in (kept, kept.with_suffix(".part"), kept.with_suffix(".name")):
                path.unlink(missing_ok=True)


def stale_parsed(folder: Path, max_age_days: float = PARSED_KEPT_DAYS) -> list[Path]:
    """Parsed pages in ``folder`` not touched for ``max_age_days``: their upload was not tried again."""
    cutoff = time.time() - max_age_days * 86400
    return [p for p in folder.glob("*.jsonl") if p.stat().st_mtime < cutoff] if folder.is_dir() else []


def kb_deleted_message(kb: OpenKB) -> str:
    return f"the knowledge base '{kb.name}' was deleted"
