"""PDF files -> parsed pages -> chunks -> vectors -> rows, one document at a time, all or nothing.

The knowledge base (``OpenKB``) keeps the books: a document is registered as *pending* before its first
row is written and becomes *complete* only after the last one; any failure or cancellation removes its
rows, figures and registry entry again (``OpenKB.remove_document``), and start-up
(``KnowledgeBases.recover``) removes what a crash left pending. This module only turns files into rows.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional

from backend.documents.chunking import chunk_pages
from backend.documents.figures import save_figure
from backend.documents.limits import PDFIUM_STRING_LIMIT
from backend.documents.ocr import get_ocr_engine
from backend.documents.pdf import ParsedPage, inspect_pdf, iter_pages
from backend.embedding.base import Embedder
from backend.errors import CancelledError, DocLensError, DocumentError, KnowledgeBaseDeleted
from backend.ingestion_read_ahead import PageReader, ReadAhead
from backend.ingestion_uploads import UploadItem, check_readable, collect_uploads, file_sha256
from backend.knowledge_bases import OpenKB, kb_deleted_message
from backend.settings import Settings
from backend.store.base import ChunkRow
from backend.text import text_language
from backend.types import Chunk, DocumentInfo, Figure, IngestResult, PageText, ProgressCallback, ProgressEvent

log = logging.getLogger(__name__)
__all__ = ["Ingestor", "UploadItem", "collect_uploads", "file_sha256"]  # the uploads are named here too


@dataclass
class _Job:
    """One document in flight: what to undo if it does not finish."""

    kb: OpenKB
    item: UploadItem
    doc_id: str
    report: Callable[..., None]
    cancel: Optional[threading.Event]
    pages: list[PageText] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    empty_ocr_pages: list[int] = field(default_factory=list)
    unreadable_pages: list[int] = field(default_factory=list)  # pdfium could not load them
    cut_pages: list[int] = field(default_factory=list)  # a text string cut by pdfium
    characters: int = 0

    def check_cancel(self) -> None:
        if self.kb.deleted.is_set():
            raise KnowledgeBaseDeleted(kb_deleted_message(self.kb))
        if self.cancel is not None and self.cancel.is_set():
            raise CancelledError(f"{self.item.name}: cancelled")


class Ingestor:
    """Turns files into rows of a knowledge base; the knowledge base does the bookkeeping and storing."""

    def __init__(self, settings: Settings, embedder: Embedder):
        self.settings = settings
        self.embedder = embedder

    def run(
        self,
        kb: OpenKB,
        items: list[UploadItem],
        progress: Optional[ProgressCallback] = None,
        cancel: Optional[threading.Event] = None,
    ) -> list[IngestResult]:
        results = []
        ahead = ReadAhead(items, self.settings, cancel)
        try:
            for index, item in enumerate(items, 1):
                if kb.deleted.is_set():  # the rest is not started: nothing of it may be written
                    results.append(
                        IngestResult(item.name, "failed", error=f"{item.name}: not added: " + kb_deleted_message(kb))
                    )
                    continue
                if cancel is not None and cancel.is_set():
                    results.append(IngestResult(item.name, "cancelled", error=f"{item.name}: cancelled before start"))
                    continue
                report = _reporter(progress, item.name, index, len(items))
                report("file", message=f"file {index} of {len(items)}")
                results.append(self.ingest_one(kb, item, report, cancel, ahead))
        finally:
            ahead.close()
        if progress is not None and items:
            progress(ProgressEvent("done", file_index=len(items), file_count=len(items), message="done"))
        return results

    def ingest_one(self, kb: OpenKB, item: UploadItem, report, cancel, ahead: ReadAhead) -> IngestResult:
        started = time.perf_counter()
        try:
            result = self._ingest(kb, item, report, cancel, ahead)
        except KnowledgeBaseDeleted:
            result = IngestResult(item.name, "failed", error=f"{item.name}: not added: " + kb_deleted_message(kb))
        except CancelledError:
            result = IngestResult(item.name, "cancelled", error=f"{item.name}: cancelled; nothing was stored")
        except DocLensError as exc:
            result = IngestResult(item.name, "failed", error=_naming(item, str(exc)))
        except Exception as exc:  # a bug or a library failure on a strange file: the other files go on
            log.exception("ingesting %s failed", item.name)
            result = IngestResult(item.name, "failed", error=f"{item.name}: unexpected {exc.__class__.__name__}: {exc}")
        result.seconds = time.perf_counter() - started
        log.info("%s: %s (%s)", item.name, result.status, result.error or f"{result.chunks} chunks")
        return result

    def _ingest(self, kb: OpenKB, item: UploadItem, report, cancel, ahead: ReadAhead) -> IngestResult:
        reader = ahead.take(item)
        try:
            return self._ingest_read(kb, item, report, cancel, ahead, reader)
        finally:
            if reader is not None:
                reader.stop()  # a duplicate or a failure leaves it unread

    def _ingest_read(
        self, kb: OpenKB, item: UploadItem, report, cancel, ahead: ReadAhead, reader: Optional[PageReader]
    ) -> IngestResult:
        check_readable(item)
        sha = reader.sha if reader is not None else file_sha256(item.path)
        duplicate = kb.registry.document_by_sha(sha)
        if duplicate is not None:
            same = "" if duplicate.file == item.name else f" as {duplicate.file}"
            return IngestResult(
                item.name,
                "duplicate",
                pages=duplicate.pages,
                ocr_pages=duplicate.ocr_pages,
                chunks=duplicate.chunks,
                figures=duplicate.figures,
                error=f"{item.name}: the same content is already indexed{same}; skipped",
            )
        # A file read ahead already has its digest and page count: no need to read or open it again.
        page_count = reader.page_count if reader is not None else inspect_pdf(item.path, self.settings)
        previous = kb.registry.document_by_file(item.name)
        job = _Job(kb, item, doc_id=sha[:32], report=report, cancel=cancel)
        kb.begin_document(job.doc_id, item.name, sha)
        try:
            kb.keep_original(job.doc_id, item.path)
            pages = (
                reader.pages()
                if reader is not None
                else iter_pages(item.path, self.settings, ocr_engine=get_ocr_engine(self.settings))
            )
            chunks = self._parse_and_chunk(job, page_count, pages)
            ahead.start_after(item, kb)  # the next file is parsed while this one is embedded
            self._embed_and_store(job, chunks)
            kb.complete_document(job.doc_id, job.pages, job.figures, len(chunks), page_count, job.check_cancel)
        except BaseException:
            kb.remove_document(job.doc_id)
            raise
        replaced = previous if previous is not None and previous.doc_id != job.doc_id else None
        if replaced is not None:
            kb.remove_document(replaced.doc_id)
        return IngestResult(
            item.name,
            "indexed" if replaced is None else "replaced",
            pages=page_count,
            ocr_pages=sum(p.ocr for p in job.pages),
            chunks=len(chunks),
            figures=len(job.figures),
            empty_ocr_pages=job.empty_ocr_pages,
            error=_notes(job, replaced),
        )

    def _parse_and_chunk(self, job: _Job, page_count: int, pages: Iterator[ParsedPage]) -> list[Chunk]:
        figure_dir = job.kb.figure_dir(job.doc_id)
        for parsed in pages:
            job.check_cancel()
            job.report(
                "ocr" if parsed.ocr else "parse",
                parsed.page,
                page_count,
                f"{'OCR' if parsed.ocr else 'page'} {parsed.page} of {page_count}",
            )
            job.pages.append(PageText(parsed.page, parsed.text, parsed.ocr))
            self._check_chunk_budget(job, parsed)
            if parsed.ocr and parsed.empty_ocr:
                job.empty_ocr_pages.append(parsed.page)
            if parsed.unreadable:
                job.unreadable_pages.append(parsed.page)
            if parsed.cut_objects:
                job.cut_pages.append(parsed.page)
            for figure in parsed.figures:
                path = save_figure(figure, figure_dir)
                job.figures.append(
                    Figure(
                        id=f"{job.doc_id}/{path.stem}",
                        doc_id=job.doc_id,
                        file=job.item.name,
                        page=parsed.page,
                        path=str(path),
                        caption=figure.caption or "",
                    )
                )
        job.check_cancel()
        chunks = chunk_pages(job.pages, self.settings.ingest.chunk_size, self.settings.ingest.chunk_overlap)
        if not chunks:
            raise DocLensError(_no_text_reason(job))
        if len(chunks) > self.settings.ingest.max_chunks:
            raise DocumentError(
                f"{job.item.name}: {len(chunks):,} chunks: more than ingest.max_chunks "
                f"({self.settings.ingest.max_chunks:,}); split the document"
            )
        return chunks

    def _check_chunk_budget(self, job: _Job, parsed: ParsedPage) -> None:
        """A chunk holds at most chunk_size characters: more text than max_chunks of them is refused at
        the page where it is passed, not after parsing (and holding) the rest of the document."""
        job.characters += len(parsed.text)
        ingest = self.settings.ingest
        if job.characters > ingest.max_chunks * ingest.chunk_size:
            raise DocumentError(
                f"{job.item.name}: by page {parsed.page} the text fills more than "
                f"{ingest.max_chunks:,} chunks: more than ingest.max_chunks; split the document"
            )

    def _embed_and_store(self, job: _Job, chunks: list[Chunk]) -> None:
        total = len(chunks)
        job.report("embed", 0, total, f"embedding {total} chunks")

        def on_batch(done: int, _total: int) -> None:
            job.check_cancel()
            job.report("embed", done, total, f"embedding {done} of {total}")

        vectors = self.embedder.embed_passages([c.text for c in chunks], progress=on_batch)
        job.check_cancel()
        rows = [
            ChunkRow(
                id=f"{job.doc_id}:{c.chunk_index}",
                doc_id=job.doc_id,
                filename=job.item.name,
                page=c.page,
                page_end=c.page_end,
                chunk_index=c.chunk_index,
                content=c.text,
                vector=v,
                lang=c.lang or text_language(c.text),
                kind=c.kind,
            )
            for c, v in zip(chunks, vectors)
        ]
        batch = 256
        for start in range(0, total, batch):
            job.check_cancel()
            job.kb.add_rows(rows[start : start + batch])
            job.report("store", min(total, start + batch), total, f"storing {min(total, start + batch)} of {total}")


def _reporter(progress: Optional[ProgressCallback], name: str, index: int, count: int):
    def report(stage: str, current: int = 0, total: int = 0, message: str = "") -> None:
        if progress is not None:
            progress(ProgressEvent(stage, name, index, count, current, total, message))

    return report


def _naming(item: UploadItem, message: str) -> str:
    """Every failure line names the file, once, as the user knows it (not as the upload's temp file)."""
    own = f"{item.path.name}: "
    if item.path.name != item.name and message.startswith(own):
        message = message[len(own) :]
    return message if item.name in message else f"{item.name}: {message}"


def _no_text_reason(job: _Job) -> str:
    if job.unreadable_pages:
        return (
            f"{job.item.name}: no text found (pdfium cannot load pages {_page_list(job.unreadable_pages)}: "
            f"a damaged page tree)"
        )
    if job.empty_ocr_pages:
        return f"{job.item.name}: no text found (OCR found nothing on pages {_page_list(job.empty_ocr_pages)})"
    return f"{job.item.name}: no text found in the document"


def _notes(job: _Job, replaced: Optional[DocumentInfo]) -> Optional[str]:
    """What the user must know about a stored document: what it replaced, and pages not (fully) read."""
    notes = []
    if replaced is not None:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(replaced.created_at))
        notes.append(f"replaced {replaced.file} (a different file: {replaced.pages} pages, indexed {when})")
    if job.empty_ocr_pages:
        notes.append(f"OCR found no text on page(s) {_page_list(job.empty_ocr_pages)}")
    if job.unreadable_pages:
        notes.append(
            f"page(s) {_page_list(job.unreadable_pages)} could not be read (pdfium cannot load them: "
            f"a damaged page tree)"
        )
    if job.cut_pages:
        notes.append(
            f"page(s) {_page_list(job.cut_pages)}: a text string over {PDFIUM_STRING_LIMIT:,} characters "
            f"was cut by pdfium, the rest of it is missing"
        )
    if not notes:
        return None
    skipped = job.empty_ocr_pages or job.unreadable_pages
    return f"{job.item.name}: " + "; ".join(notes) + ("; the other pages are indexed" if skipped else "")


def _page_list(pages: list[int]) -> str:
    return ", ".join(str(p) for p in pages[:20]) + (" …" if len(pages) > 20 else "")
