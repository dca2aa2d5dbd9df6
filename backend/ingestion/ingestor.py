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
from typing import TYPE_CHECKING, Callable, Collection, Optional

import numpy as np

from backend.answering.formula_images import MAX_READ_PER_DOCUMENT, FormulaReader
from backend.documents.ocr import get_ocr_engine
from backend.documents.pdf import inspect_pdf, iter_pages
from backend.embedding.base import Embedder
from backend.errors import CancelledError, DocLensError, KnowledgeBaseDeleted
from backend.ingestion.checkpoint import carried
from backend.ingestion.job import Job, chunk_job, pages_done, take_pages
from backend.ingestion.notes import stored_notes
from backend.ingestion.read_ahead import PageReader, ReadAhead
from backend.ingestion.uploads import (
    UploadItem,
    check_readable,
    collect_uploads,
    doc_id_of,
    file_sha256,
    keep_apart,
)
from backend.knowledge_bases.open_kb import OpenKB, kb_deleted_message
from backend.settings import Settings
from backend.stage_times import charge, stage, working_on
from backend.store.base import ChunkRow
from backend.text import text_language
from backend.types import DocumentInfo, IngestResult, ProgressCallback, ProgressEvent

if TYPE_CHECKING:  # the OpenAI SDK: imported by the client when a model is used
    from backend.llm.client import LLMClient

log = logging.getLogger(__name__)
__all__ = ["Ingestor", "UploadItem", "collect_uploads", "file_sha256"]  # the uploads are named here too


class _Upload:
    """The results of one upload, in the order of its files, and the parsed documents waiting to be
    embedded together: a paper of a few pages has two batches of chunks, too few to keep both of
    OpenVINO's streams busy, so small documents are embedded in one call (``ingest.embed_group_chunks``)."""

    def __init__(
        self, kb: OpenKB, items: list[UploadItem], cancel: Optional[threading.Event], on_result, cancel_files
    ) -> None:
        self.kb = kb
        self.items = items
        self.cancel = cancel
        self.cancel_files: Collection[int] = cancel_files
        self.on_result = on_result
        self.results: list[Optional[IngestResult]] = [None] * len(items)
        self.waiting: list[Job] = []

    def waiting_chunks(self) -> int:
        return sum(len(job.chunks) for job in self.waiting)

    def is_waiting_for(self, item: UploadItem, sha: str = "") -> bool:
        """A waiting document of this name or content: it must be finished before this file is judged."""
        return any(job.item.name == item.name or (sha and job.sha == sha) for job in self.waiting)

    def stored(self, name: str) -> bool:
        return any(r is not None and r.file == name and r.status in ("indexed", "replaced") for r in self.results)


class Ingestor:
    """Turns files into rows of a knowledge base; the knowledge base does the bookkeeping and storing."""

    def __init__(self, settings: Settings, embedder: Embedder, model: Optional[Callable[[], LLMClient]] = None):
        self.settings = settings
        self.embedder = embedder
        self.model = model  # the configured model, made when first needed: it reads drawn formulas

    def _formula_reader(self) -> Optional[FormulaReader]:
        """Formulas drawn without text read as LaTeX into the stored text, with a model (``ingest.read_formulas``)."""
        if self.model is None or not (self.settings.llm_configured and self.settings.ingest.read_formulas):
            return None
        return FormulaReader(self.model(), MAX_READ_PER_DOCUMENT)

    def run(
        self,
        kb: OpenKB,
        items: list[UploadItem],
        progress: Optional[ProgressCallback] = None,
        cancel: Optional[threading.Event] = None,
        on_result: Optional[Callable[[int, IngestResult], None]] = None,  # each file's result once known
        cancel_files: Collection[int] = (),  # places (0-based) of files cancelled alone; may grow meanwhile
    ) -> list[IngestResult]:
        upload = _Upload(kb, items, cancel, on_result, cancel_files)
        ahead = ReadAhead(items, self.settings, cancel)
        try:
            for index, item in enumerate(items, 1):
                not_started = _not_started(kb, item, cancel, index - 1 in cancel_files)
                if not_started is not None:
                    _record(upload, index - 1, not_started, 0.0)
                    continue
                report = _reporter(progress, item.name, index, len(items))
                report("file", message=f"file {index} of {len(items)}")
                if upload.is_waiting_for(item):
                    self._finish_waiting(upload)
                self._prepare_one(upload, index - 1, report, ahead)
                if upload.waiting_chunks() >= self.settings.ingest.embed_group_chunks:
                    self._finish_waiting(upload)
            self._finish_waiting(upload)
        except BaseException as exc:
            for job in upload.waiting:  # an interrupt (KeyboardInterrupt) between the two steps
                _undo(job, exc)
            raise
        finally:
            ahead.close()
        if progress is not None and items:
            progress(ProgressEvent("done", file_index=len(items), file_count=len(items), message="done"))
        return [r for r in upload.results if r is not None]

    def _prepare_one(self, upload: _Upload, slot: int, report, ahead: ReadAhead) -> None:
        """Parsed and chunked, the document waits to be embedded; a duplicate or a failure is its result."""
        item = upload.items[slot]
        job = Job(upload.kb, item, "", report, upload.cancel, slot, upload.cancel_files)
        started = time.perf_counter()
        try:
            with working_on(item.name):
                result = self._ingest(upload, job, ahead)
        except BaseException as exc:
            result = _failed(upload.kb, item, exc)
            if not isinstance(exc, Exception):  # an interrupt: recorded, then raised again
                _record(upload, slot, result, time.perf_counter() - started)
                raise
        job.seconds += time.perf_counter() - started
        if result is None:
            upload.waiting.append(job)
        else:
            _record(upload, slot, result, job.seconds)

    def _ingest(self, upload: _Upload, job: Job, ahead: ReadAhead) -> Optional[IngestResult]:
        reader = ahead.take(job.item)
        try:
            return self._ingest_read(upload, job, ahead, reader)
        finally:
            if reader is not None:
                reader.stop()  # a duplicate or a failure leaves it unread

    def _ingest_read(
        self, upload: _Upload, job: Job, ahead: ReadAhead, reader: Optional[PageReader]
    ) -> Optional[IngestResult]:
        item, kb = job.item, job.kb
        job.check_cancel()
        check_readable(item)
        job.sha = reader.sha if reader is not None else file_sha256(item.path)
        if upload.is_waiting_for(item, job.sha):  # the same content twice in one upload: the first one counts
            self._finish_waiting(upload)
        duplicate = kb.registry.document_by_sha(job.sha)
        if duplicate is not None:
            return _duplicate(item, duplicate)
        # A file read ahead already has its digest and page count: no need to read or open it again.
        job.page_count = reader.page_count if reader is not None else inspect_pdf(item.path, self.settings)
        job.previous = kb.registry.document_by_file(item.name)
        if job.previous is not None and keep_apart(item, upload.stored(item.name), kb.registry.has_file):
            job.previous = None
        job.doc_id = doc_id_of(job.sha)
        kb.begin_document(job.doc_id, item.name, job.sha)
        try:
            kb.keep_original(job.doc_id, item.path)
            done = pages_done(job)
            if reader is not None and reader.first_page != len(done):
                reader.stop()  # it read from another page than the one to resume at
                reader = None
            pages = (
                reader.pages()
                if reader is not None
                else iter_pages(item.path, self.settings, get_ocr_engine(self.settings), len(done), carried(done))
            )
            take_pages(job, done, pages, self.settings.ingest, self._formula_reader())
            job.chunks = chunk_job(job, self.settings.ingest)
            ahead.start_after(item, kb)  # the next file is parsed while this one is embedded
            # Its chunk count at once: it may wait for the next files, to be embedded with them.
            job.report("embed", 0, len(job.chunks), f"{len(job.chunks)} chunks to embed")
        except BaseException as exc:
            _undo(job, exc)
            raise
        return None

    # -- the documents waiting, embedded in one call, then stored one by one ---------------------

    def _finish_waiting(self, upload: _Upload) -> None:
        if upload.waiting:
            self._finish(upload, list(upload.waiting))

    def _finish(self, upload: _Upload, jobs: list[Job]) -> None:
        for job in [job for job in jobs if job.cancelled_alone]:  # the others of its group go on
            self._fail_all(upload, [job], CancelledError(f"{job.item.name}: cancelled"))
        jobs = [job for job in jobs if not job.cancelled_alone]
        if not jobs:
            return
        started = time.perf_counter()
        try:
            vectors = self._embed_jobs(jobs)
        except BaseException as exc:
            if len(jobs) > 1 and _document_specific(exc):
                log.info("embedding %d documents together failed (%s): each one alone", len(jobs), exc)
                for job in jobs:  # a text an endpoint refuses fails its own document only
                    self._finish(upload, [job])
                return
            self._fail_all(upload, jobs, exc)
            return
        shared = time.perf_counter() - started
        total = sum(len(job.chunks) for job in jobs)
        for job in jobs:
            job.seconds += shared * len(job.chunks) / total
            charge("embedding", shared * len(job.chunks) / total, job.item.name)
        self._store_group(upload, list(zip(jobs, _split_rows(vectors, [len(job.chunks) for job in jobs]))))

    def _embed_jobs(self, jobs: list[Job]) -> np.ndarray:
        """One call for the group; each file's progress is its own share of it (its own chunk count), and
        a file cancelled alone meanwhile is dropped when it is stored, the others of the group go on."""
        alone = len(jobs) == 1
        starts = np.cumsum([0] + [len(job.chunks) for job in jobs]).tolist()
        shown = [0] * len(jobs)

        def on_batch(done: int, _total: int) -> None:
            jobs[-1].check_cancel(whole_upload_only=not alone)
            for i, job in enumerate(jobs):
                own = max(0, min(len(job.chunks), done - starts[i]))
                if own != shown[i]:
                    shown[i] = own
                    job.report("embed", own, len(job.chunks), f"embedding {own} of {len(job.chunks)}")

        jobs[-1].check_cancel(whole_upload_only=not alone)
        with stage("embedding"), working_on(""):  # each file's share is charged to it after (_finish)
            vectors = self.embedder.embed_passages([c.text for job in jobs for c in job.chunks], progress=on_batch)
        jobs[-1].check_cancel(whole_upload_only=not alone)
        return vectors

    def _fail_all(self, upload: _Upload, jobs: list[Job], exc: BaseException) -> None:
        for job in jobs:
            _undo(job, exc)
            _record(upload, job.slot, _failed(job.kb, job.item, exc), job.seconds)
        if not isinstance(exc, Exception):
            raise exc

    def _store_group(self, upload: _Upload, group: list[tuple[Job, np.ndarray]]) -> None:
        """The group's rows in one insert (a call to Milvus Lite costs ~10 ms however few rows it holds; a
        small paper has 10-20), then each document completed on its own. If the insert fails, each document
        is stored alone, so that one that cannot be stored fails alone."""
        if len(group) == 1:
            self._store_one(upload, *group[0])
            return
        kb, started = group[0][0].kb, time.perf_counter()
        try:
            with stage("storing"), working_on(""):
                for job, _ in group:
                    job.check_cancel()
                kb.add_rows([row for job, vectors in group for row in _rows(job, vectors)])
        except Exception as exc:
            log.info("storing %d documents together failed (%s): each one alone", len(group), exc)
            try:
                kb.remove_rows([job.doc_id for job, _ in group])  # what the insert wrote before it failed
            except Exception:
                self._fail_all(upload, [job for job, _ in group], exc)  # no way to take them apart
                return
            for job, vectors in group:
                self._store_one(upload, job, vectors)
            return
        except BaseException as exc:  # an interrupt: each is undone, then it is raised again
            self._fail_all(upload, [job for job, _ in group], exc)
            raise
        shared = (time.perf_counter() - started) / len(group)
        for job, _ in group:
            charge("storing", shared, job.item.name)
            self._store_one(upload, job, None, shared)

    def _store_one(self, upload: _Upload, job: Job, vectors: Optional[np.ndarray], stored: float = 0.0) -> None:
        """The document's rows (unless ``vectors`` is None: stored with its group, in ``stored`` seconds),
        then its pages and figures, and it is marked complete."""
        started = time.perf_counter() - stored
        try:
            with stage("storing"), working_on(job.item.name):
                if vectors is not None:
                    self._store(job, vectors)
                else:
                    job.report(
                        "store", len(job.chunks), len(job.chunks), f"storing {len(job.chunks)} of {len(job.chunks)}"
                    )
                job.kb.complete_document(
                    job.doc_id, job.pages, job.figures, len(job.chunks), job.page_count, job.check_cancel
                )
                job.kb.forget_parsed(job.doc_id)  # the pages kept while it was pending, and a resumed original
        except BaseException as exc:
            _undo(job, exc)
            _record(upload, job.slot, _failed(job.kb, job.item, exc), job.seconds + time.perf_counter() - started)
            if not isinstance(exc, Exception):
                raise
            return
        _record(upload, job.slot, self._stored_result(job), job.seconds + time.perf_counter() - started)

    def _stored_result(self, job: Job) -> IngestResult:
        previous = job.previous
        replaced = previous if previous is not None and previous.doc_id != job.doc_id else None
        if replaced is not None:
            job.kb.remove_document(replaced.doc_id)
        return IngestResult(
            job.item.name,
            "indexed" if replaced is None else "replaced",
            pages=job.page_count,
            ocr_pages=sum(p.ocr for p in job.pages),
            chunks=len(job.chunks),
            figures=len(job.figures),
            empty_ocr_pages=job.empty_ocr_pages,
            error=stored_notes(job.item, replaced, job.empty_ocr_pages, job.unreadable_pages, job.cut_pages),
        )

    def _store(self, job: Job, vectors: np.ndarray) -> None:
        rows = _rows(job, vectors)
        total = len(rows)
        batch = 256
        for start in range(0, total, batch):
            job.check_cancel()
            job.kb.add_rows(rows[start : start + batch])
            job.report("store", min(total, start + batch), total, f"storing {min(total, start + batch)} of {total}")


def _rows(job: Job, vectors: np.ndarray) -> list[ChunkRow]:
    return [
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
        for c, v in zip(job.chunks, vectors)
    ]


def _reporter(progress: Optional[ProgressCallback], name: str, index: int, count: int):
    def report(stage: str, current: int = 0, total: int = 0, message: str = "") -> None:
        if progress is not None:
            progress(ProgressEvent(stage, name, index, count, current, total, message))

    return report


def _not_started(
    kb: OpenKB, item: UploadItem, cancel: Optional[threading.Event], cancelled_alone: bool
) -> Optional[IngestResult]:
    if kb.deleted.is_set():  # the rest is not started: nothing of it may be written
        return IngestResult(item.name, "failed", error=f"{item.name}: not added: " + kb_deleted_message(kb))
    if cancelled_alone or (cancel is not None and cancel.is_set()):
        return IngestResult(item.name, "cancelled", error=f"{item.name}: cancelled before start")
    return None


def _undo(job: Job, exc: BaseException) -> None:
    """A document that did not finish is removed; after Ctrl-C or a shutdown, the pages it had parsed stay
    for the same file's next upload (``ingestion.checkpoint``)."""
    if isinstance(exc, Exception):
        job.kb.remove_document(job.doc_id)
    else:
        job.kb.interrupt_document(job.doc_id)


def _failed(kb: OpenKB, item: UploadItem, exc: BaseException) -> IngestResult:
    """What a document that did not finish reports, naming the file and the reason."""
    if isinstance(exc, KnowledgeBaseDeleted):
        return IngestResult(item.name, "failed", error=f"{item.name}: not added: " + kb_deleted_message(kb))
    if isinstance(exc, CancelledError):
        return IngestResult(item.name, "cancelled", error=f"{item.name}: cancelled; nothing was stored")
    if isinstance(exc, DocLensError):
        return IngestResult(item.name, "failed", error=_naming(item, str(exc)))
    if not isinstance(exc, Exception):  # an interrupt: recorded, then raised again by the caller
        return IngestResult(item.name, "cancelled", error=f"{item.name}: interrupted; nothing was stored")
    # a bug or a library failure on a strange file: the other files go on
    log.error("ingesting %s failed", item.name, exc_info=exc)
    return IngestResult(item.name, "failed", error=f"{item.name}: unexpected {exc.__class__.__name__}: {exc}")


def _duplicate(item: UploadItem, duplicate: DocumentInfo) -> IngestResult:
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


def _record(upload: _Upload, slot: int, result: IngestResult, seconds: float) -> None:
    result.seconds = seconds
    upload.results[slot] = result
    upload.waiting = [job for job in upload.waiting if job.slot != slot]
    log.info("%s: %s (%s)", result.file, result.status, result.error or f"{result.chunks} chunks")
    if upload.on_result is not None:
        upload.on_result(slot, result)


def _document_specific(exc: BaseException) -> bool:
    """A failure that may belong to one document's texts, not to the upload (cancelled, deleted, interrupted)."""
    return isinstance(exc, Exception) and not isinstance(exc, (CancelledError, KnowledgeBaseDeleted))


def _split_rows(vectors: np.ndarray, counts: list[int]) -> list[np.ndarray]:
    edges = np.cumsum(counts)[:-1]
    return np.split(vectors, edges)


def _naming(item: UploadItem, message: str) -> str:
    """Every failure line names the file, once, as the user knows it (not as the upload's temp file)."""
    own = f"{item.path.name}: "
    if item.path.name != item.name and message.startswith(own):
        message = message[len(own) :]
    return message if item.name in message else f"{item.name}: {message}"
