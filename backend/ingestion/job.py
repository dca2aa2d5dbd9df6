"""One document in flight: its pages taken in as they are parsed (each kept on disk at once, so a crash
resumes after the last one: ``checkpoint``), then cut into chunks."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Collection, Iterator, Optional

from backend.answering.formula_images import FormulaReader
from backend.documents.chunking import chunk_pages, with_figure_chunks
from backend.documents.equations import save_formulas
from backend.documents.figures import PageFigure, save_figure
from backend.documents.pdf import ParsedPage
from backend.errors import CancelledError, DocLensError, DocumentError, KnowledgeBaseDeleted
from backend.ingestion.checkpoint import DonePage, PageCheckpoint
from backend.ingestion.notes import no_text_reason
from backend.ingestion.uploads import UploadItem
from backend.knowledge_bases.open_kb import OpenKB, kb_deleted_message
from backend.settings import IngestSettings
from backend.types import Chunk, DocumentInfo, Figure, PageText

log = logging.getLogger(__name__)


@dataclass
class Job:
    """One document in flight: what to undo if it does not finish, and what it was parsed into."""

    kb: OpenKB
    item: UploadItem
    doc_id: str
    report: Callable[..., None]
    cancel: Optional[threading.Event]
    slot: int = 0  # its place among the upload's results
    cancel_files: Collection[int] = ()  # the places of the files the user cancelled one by one
    sha: str = ""
    page_count: int = 0
    previous: Optional[DocumentInfo] = None  # a document of the same name that it replaces once complete
    pages: list[PageText] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    empty_ocr_pages: list[int] = field(default_factory=list)
    unreadable_pages: list[int] = field(default_factory=list)  # pdfium could not load them
    cut_pages: list[int] = field(default_factory=list)  # a text string cut by pdfium
    characters: int = 0
    seconds: float = 0.0  # spent on it so far
    resumed_after: int = 0  # pages an interrupted upload of the same file had parsed already

    def check_cancel(self, whole_upload_only: bool = False) -> None:
        if self.kb.deleted.is_set():
            raise KnowledgeBaseDeleted(kb_deleted_message(self.kb))
        if self.cancel is not None and self.cancel.is_set():
            raise CancelledError(f"{self.item.name}: cancelled")
        if not whole_upload_only and self.cancelled_alone:
            raise CancelledError(f"{self.item.name}: cancelled")

    @property
    def cancelled_alone(self) -> bool:
        return self.slot in self.cancel_files

    @property
    def checkpoint(self) -> PageCheckpoint:
        return PageCheckpoint(self.kb.parsed_pages(self.doc_id))


def pages_done(job: Job) -> list[DonePage]:
    """The pages an interrupted upload of the same content parsed (kept at start by ``recover``)."""
    return job.checkpoint.load()


def take_pages(
    job: Job,
    done: list[DonePage],
    pages: Iterator[ParsedPage],
    limits: IngestSettings,
    formulas: Optional[FormulaReader] = None,
) -> None:
    """The pages done before, then each page as it is parsed, into the job and onto disk; ``formulas``
    reads the formulas drawn without text as LaTeX into the page's text."""
    checkpoint = job.checkpoint
    checkpoint.start(done)
    for page in done:
        _take(job, page, limits)
    if done:
        job.resumed_after = len(done)
        log.info("%s: resuming after page %d of %d", job.item.name, len(done), job.page_count)
        job.report("parse", len(done), job.page_count, f"resuming after page {len(done)} of {job.page_count}")
    figure_dir = job.kb.figure_dir(job.doc_id)
    for parsed in pages:
        job.check_cancel()
        what = "OCR" if parsed.ocr else "page"
        job.report(
            "ocr" if parsed.ocr else "parse", parsed.page, job.page_count, f"{what} {parsed.page} of {job.page_count}"
        )
        text = parsed.text
        if parsed.formulas:
            save_formulas(parsed.formulas, figure_dir)  # read by the vision model, now or when cited
            text = formulas.read(text, lambda key: figure_dir / f"{key}.png") if formulas else text
        page = DonePage(
            PageText(parsed.page, text, parsed.ocr),
            [_saved(job, parsed.page, figure, save_figure(figure, figure_dir)) for figure in parsed.figures],
            empty_ocr=parsed.ocr and parsed.empty_ocr,
            unreadable=parsed.unreadable,
            cut_objects=parsed.cut_objects,
            carry=parsed.carry,
        )
        _take(job, page, limits)
        checkpoint.append(page)
    job.check_cancel()


def chunk_job(job: Job, limits: IngestSettings) -> list[Chunk]:
    chunks = with_figure_chunks(chunk_pages(job.pages, limits.chunk_size, limits.chunk_overlap), job.figures)
    if not chunks:
        raise DocLensError(no_text_reason(job.item.name, job.unreadable_pages, job.empty_ocr_pages))
    if len(chunks) > limits.max_chunks:
        raise DocumentError(
            f"{job.item.name}: {len(chunks):,} chunks: more than ingest.max_chunks "
            f"({limits.max_chunks:,}); split the document"
        )
    return chunks


def _take(job: Job, page: DonePage, limits: IngestSettings) -> None:
    number = page.page.page
    job.pages.append(page.page)
    _check_chunk_budget(job, number, len(page.page.text), limits)
    if page.empty_ocr:
        job.empty_ocr_pages.append(number)
    if page.unreadable:
        job.unreadable_pages.append(number)
    if page.cut_objects:
        job.cut_pages.append(number)
    for figure in page.figures:
        figure.file = job.item.name  # the same content may come back under another name
        job.figures.append(figure)


def _saved(job: Job, number: int, figure: PageFigure, path: Path) -> Figure:
    return Figure(
        id=f"{job.doc_id}/{path.stem}",
        doc_id=job.doc_id,
        file=job.item.name,
        page=number,
        path=str(path),
        caption=figure.caption or "",
        text=figure.text,
        context=figure.context,
    )


def _check_chunk_budget(job: Job, number: int, characters: int, limits: IngestSettings) -> None:
    """A chunk holds at most chunk_size characters: more text than max_chunks of them is refused at
    the page where it is passed, not after parsing (and holding) the rest of the document."""
    job.characters += characters
    if job.characters > limits.max_chunks * limits.chunk_size:
        raise DocumentError(
            f"{job.item.name}: by page {number} the text fills more than "
            f"{limits.max_chunks:,} chunks: more than ingest.max_chunks; split the document"
        )
