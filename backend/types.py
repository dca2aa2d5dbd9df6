"""Plain result types shared by the backend rooms, the UI and the CLI."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Callable, Optional


@dataclass
class KnowledgeBase:
    name: str
    collection: str
    documents: int
    chunks: int
    embedding_model: str
    dim: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class PageText:
    """The text of one PDF page after parsing or OCR (tables inlined as Markdown)."""

    page: int  # 1-based
    text: str
    ocr: bool = False


@dataclass
class Chunk:
    """A piece of a document as it is indexed."""

    text: str
    page: int  # first page, 1-based
    page_end: int  # last page (== page unless the chunk crosses a page break)
    chunk_index: int
    lang: str = ""  # "zh", "en" or "" (unknown); set at ingest from the text when the parser leaves it empty
    kind: str = "text"  # "text", "references", "table", "equation" or "figure" (a figure's own text)


@dataclass
class Figure:
    """A figure or chart saved as PNG under the knowledge base's folder."""

    id: str  # "<doc_id>/p3_fig1"
    doc_id: str
    file: str  # display file name of the document
    page: int
    path: str  # absolute path of the PNG inside data_dir
    caption: str = ""
    text: str = ""  # words drawn in it that were taken out of the body (a plot drawn with words)
    context: str = ""  # sentences next to it that refer to it ("从下图中可以看出…"), found at ingest

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "file": self.file, "page": self.page, "path": self.path, "caption": self.caption}


@dataclass
class DocumentInfo:
    doc_id: str
    file: str
    sha256: str
    pages: int
    ocr_pages: int
    chunks: int
    figures: int
    status: str  # "pending" while ingesting, "complete" once every chunk is stored, "trashed" once deleted
    created_at: float = 0.0
    bytes: int = 0  # the stored original's size (0: registered before sizes were kept)

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "pages": self.pages,
            "ocr_pages": self.ocr_pages,
            "chunks": self.chunks,
            "figures": self.figures,
            "status": self.status,
            "doc_id": self.doc_id,
            "bytes": self.bytes,
            "created_at": self.created_at,
        }


DOCUMENT_SORTS = ("file", "pages", "chunks", "size", "added", "status")


MAX_FILTER_CHARS = 200  # of DocumentPage.contains


@dataclass
class DocumentPage:
    """One page of a knowledge base's document list, filtered and sorted where the documents are kept (a
    library of 10,000 never travels whole): what was asked, then what the page holds."""

    contains: str = ""  # part of the file name, in any case
    sort: str = "file"  # one of DOCUMENT_SORTS
    descending: bool = False
    offset: int = 0  # moved back to the last page when fewer documents match
    limit: int = 20
    rows: list[DocumentInfo] = field(default_factory=list)
    total: int = 0  # how many documents match ``contains``
    originals: dict[str, str] = field(default_factory=dict)  # doc_id -> its stored PDF, for the rows that have one


@dataclass
class TrashEntry:
    """A knowledge base or a document deleted by a user: kept (rows and files) until ``expires_at``."""

    id: str  # what `trash restore ID` takes: "k…" a knowledge base, "d…" a document
    kind: str  # "kb" | "document"
    kb: str  # the knowledge base's name (when it was deleted, for a knowledge base)
    file: str  # the document's name ("" for a knowledge base)
    deleted_at: float
    deleted_by: str  # the login, "local" (the web app without logins) or "cli"
    expires_at: float
    documents: int = 0
    chunks: int = 0
    doc_id: str = ""  # a document's content id ("" for a knowledge base)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "kb": self.kb,
            "file": self.file,
            "deleted_at": self.deleted_at,
            "deleted_by": self.deleted_by,
            "expires_at": self.expires_at,
            "documents": self.documents,
            "chunks": self.chunks,
            "doc_id": self.doc_id,
        }


@dataclass
class IngestResult:
    file: str
    status: str  # indexed | duplicate | replaced | failed | cancelled
    pages: int = 0
    ocr_pages: int = 0
    chunks: int = 0
    figures: int = 0
    seconds: float = 0.0
    error: Optional[str] = None
    empty_ocr_pages: list[int] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status in ("indexed", "duplicate", "replaced")

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "status": self.status,
            "pages": self.pages,
            "ocr_pages": self.ocr_pages,
            "chunks": self.chunks,
            "figures": self.figures,
            "seconds": round(self.seconds, 3),
            "error": self.error,
        }  # pages whose OCR found nothing are named in ``error`` (a note)


@dataclass
class ProgressEvent:
    """One step of a long job. ``stage``: file, parse, ocr, embed, store, done."""

    stage: str
    file: str = ""
    file_index: int = 0  # 1-based
    file_count: int = 0
    current: int = 0
    total: int = 0
    message: str = ""

    @property
    def fraction(self) -> float:
        """Overall progress 0..1 across files, for progress bars."""
        if self.stage == "done":
            return 1.0
        if self.stage == "search":  # evaluation: one bar over the questions of a mode
            return self.current / self.total if self.total else 0.0
        if not self.file_count:
            return 0.0
        return min(1.0, ((self.file_index - 1) + self.file_fraction) / self.file_count)

    @property
    def file_fraction(self) -> float:
        """How far its own file is, 0..1 (small files are embedded together, so the files of an upload
        are not finished in order: an upload's bar adds these up per file, see ui/knowledge_bases)."""
        within = (self.current / self.total) if self.total else 0.0
        weights = {"file": 0.0, "parse": 0.6, "ocr": 0.6, "embed": 0.3, "store": 0.1, "done": 0.0}
        offsets = {"file": 0.0, "parse": 0.0, "ocr": 0.0, "embed": 0.6, "store": 0.9, "done": 1.0}
        return min(1.0, offsets.get(self.stage, 0.0) + weights.get(self.stage, 0.0) * within)


ProgressCallback = Callable[[ProgressEvent], None]


# -- how fast a long job goes: pages/s and the time left, beside the bar (web app and CLI alike) -----------

PACE_MIN_SECONDS = 2.0  # a rate over a shorter time swings too much to show
PAGE_STAGES = ("parse", "ocr")  # one count of pages: a file may have both kinds


@dataclass(frozen=True)
class Rate:
    per_second: float
    unit: str  # "pages" or "chunks"
    seconds_left: float  # for the rest of this stage of this file


class Pace:
    """Pages (or chunks being embedded) per second of the file in hand, measured from when it was first
    seen in that stage, and the seconds its rest takes at that rate."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._first: dict[tuple[int, str, str], tuple[float, int]] = {}  # -> (time, count) first seen

    def update(self, event: ProgressEvent) -> Optional[Rate]:
        """The rate after ``event``, or None while too little is known (or the stage is not counted)."""
        unit = "pages" if event.stage in PAGE_STAGES else "chunks" if event.stage == "embed" else ""
        if not unit or not event.total:
            return None
        now = self._clock()
        started, first_count = self._first.setdefault((event.file_index, event.file, unit), (now, event.current))
        elapsed, done = now - started, event.current - first_count
        if elapsed < PACE_MIN_SECONDS or done < 1:
            return None
        per_second = done / elapsed
        return Rate(per_second, unit, max(0, event.total - event.current) / per_second)


def duration_text(seconds: float) -> tuple[int, str]:
    """A rounded duration as (number, unit): "s" under 90 s, "min" under 90 min, else "h"."""
    if seconds < 90:
        return max(1, round(seconds)), "s"
    if seconds < 90 * 60:
        return round(seconds / 60), "min"
    return round(seconds / 3600), "h"


def per_second_text(rate: Rate) -> str:
    """Two figures where it is slow (0.35 pages/s of OCR), whole numbers where it is fast."""
    value = rate.per_second
    return f"{value:.2f}" if value < 1 else f"{value:.1f}" if value < 10 else f"{value:.0f}"


def rate_text(rate: Rate) -> str:
    """e.g. "0.35 pages/s, about 19 min left" (the CLI's words; the web app says it in the user's language)."""
    amount, unit = duration_text(rate.seconds_left)
    return f"{per_second_text(rate)} {rate.unit}/s, about {amount} {unit} left"


@dataclass
class Source:
    """One ranked passage with everything the user needs to judge it."""

    file: str
    doc_id: str
    page: int
    page_end: int
    chunk_index: int
    text: str
    relevance: float = 0.0  # 0-100, the reranker's composite score (or the mode's own score)
    scores: dict[str, float] = field(
        default_factory=dict
    )  # fuzzy, keyword, semantic, length, rank, entity, bm25, document
    dense_rank: Optional[int] = None  # 1-based rank in the dense search, None if not found there
    keyword_rank: Optional[int] = None  # 1-based rank in the BM25 search
    bm25_lead: float = 0.0  # its BM25 score as a share of the keyword search's best (0: not found by it)
    similarity: Optional[float] = None  # cosine question/chunk (across languages: less its hubness, hubness.py)
    rrf: float = 0.0
    chunk_id: str = ""
    lang: str = ""  # the chunk's language: "zh", "en" or "" (unknown)
    bridged: bool = False  # scored across languages without a translation (see retrieval/crosslingual.py)
    kind: str = "text"  # the chunk's kind: "text", "references", "table", "equation" or "figure"
    kb: str = ""  # the name of the knowledge base it was found in

    def to_dict(self) -> dict[str, Any]:
        return {
            "kb": self.kb,
            "file": self.file,
            "page": self.page,
            "page_end": self.page_end,
            "text": self.text,
            "relevance": round(self.relevance, 2),
            "scores": {k: round(v, 2) for k, v in self.scores.items()},
            "dense_rank": self.dense_rank,
            "keyword_rank": self.keyword_rank,
            "similarity": None if self.similarity is None else round(self.similarity, 4),
            "chunk_index": self.chunk_index,
            "kind": self.kind,
        }


class SearchMode(StrEnum):
    """The one list of search modes (each is a plain string too: ``SearchMode.DENSE == "dense"``)."""

    DENSE = "dense"  # vectors only
    KEYWORD = "keyword"  # BM25 only
    HYBRID = "hybrid"  # both, fused by weighted RRF
    RERANK = "rerank"  # hybrid, then the composite rerank (the default)


SEARCH_MODES: tuple[str, ...] = tuple(mode.value for mode in SearchMode)


@dataclass
class SearchResult:
    question: str
    mode: str
    confidence: float  # 0-100: calibrated chance that an answer is among the top sources
    sources: list[Source]
    latency_ms: float = 0.0
    queries: list[str] = field(default_factory=list)  # the question and its translations, if any
    searched_in: str = ""  # the document(s) (and pages) the question named and the search was limited to
    missing_document: str = ""  # a PDF the question names that no searched document answers to

    def abstains(self, abstain_below: float) -> bool:
        """The documents do not seem to hold the answer: below the threshold (``confidence.abstain_below``),
        or asked about a document that is not there (``missing_document``), with passages to show (no
        passage at all already says so on its own). Abstention off (0) never abstains."""
        low = self.confidence < abstain_below or bool(self.missing_document and abstain_below > 0)
        return bool(self.sources) and low

    def to_dict(self) -> dict[str, Any]:
        return {
            "confidence": round(self.confidence, 1),
            "mode": self.mode,
            "sources": [s.to_dict() for s in self.sources],
            "searched_in": self.searched_in,
            "missing_document": self.missing_document,
        }


@dataclass
class Answer:
    answer: str
    mode: str  # llm | extractive | abstained | vision | vision-fallback
    confidence: float
    sources: list[Source]
    figure: Optional[Figure] = None
    notice: str = ""  # one line for the user: no model configured, model failed and why, ...
    question: str = ""  # the standalone question that was searched
    searched_in: str = ""  # the document(s) (and pages) the question named and the search was limited to
    excerpts: list[str] = field(default_factory=list)  # an extractive answer: the quoted part of each source shown
    # The confidence was below confidence.abstain_below: the sources are the closest, not an answer.
    abstained: bool = False

    @property
    def quotes_passages(self) -> bool:
        """The answer's text is the passages quoted (no model, it failed, or the answer abstained)."""
        return self.mode in ("extractive", "abstained")

    def to_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "mode": self.mode,
            "confidence": round(self.confidence, 1),
            "sources": [s.to_dict() for s in self.sources],
            "figure": self.figure.to_dict() if self.figure else None,
            "notice": self.notice,
            "searched_in": self.searched_in,
            "abstained": self.abstained,
        }


@dataclass
class AnswerUpdate:
    """One step of a streamed answer: the text so far; the last update carries the final Answer. The first
    update of a question about the text carries the ranked ``sources`` (and ``confidence``), no text: found
    before the model is asked, they can be shown while it writes."""

    text: str
    delta: str = ""
    done: bool = False
    answer: Optional[Answer] = None
    sources: Optional[list[Source]] = None
    confidence: Optional[float] = None
