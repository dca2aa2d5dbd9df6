"""The one facade the UI, the CLI and the tests call. Nothing above this layer touches Milvus or a model."""

from __future__ import annotations

import logging
import shutil
import threading
from pathlib import Path
from typing import Iterator, Optional, Sequence, Union

from backend.errors import DocLensError, KnowledgeBaseError
from backend.knowledge_bases import KnowledgeBases, OpenKB
from backend.settings import Settings
from backend.store.milvus import MilvusStore
from backend.types import (Answer, DocumentInfo, Figure, IngestResult, KnowledgeBase, ProgressCallback,
                           SearchResult)

log = logging.getLogger(__name__)


class DocLens:
    """Everything a user can do, as plain method calls returning plain result types."""

    def __init__(self, settings: Settings):
        self.settings = settings
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        token = settings.milvus.token.get_secret_value() if settings.milvus.token else ""
        self.store = MilvusStore(settings.milvus_uri, token=token, index_type=settings.milvus.index_type)
        self.kbs = KnowledgeBases(self.store, settings.data_dir, self._embedding_signature)
        self._embedder = None
        self._embedder_lock = threading.Lock()
        self.recover()

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> "DocLens":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- settings -----------------------------------------------------------------------------

    def reconfigure(self, settings: Settings) -> None:
        """Apply new settings to this running server (the Settings tab); secrets stay in memory only."""
        if settings.milvus_uri != self.settings.milvus_uri:
            raise DocLensError("changing the Milvus URI needs a restart (set DOCLENS_MILVUS_URI and start again)")
        embedding_changed = settings.embedding != self.settings.embedding
        self.settings = settings
        if embedding_changed:
            with self._embedder_lock:
                self._embedder = None

    # -- models -------------------------------------------------------------------------------

    @property
    def embedder(self):
        with self._embedder_lock:
            if self._embedder is None:
                from backend.embedding import create_embedder  # heavy import: only when needed
                self._embedder = create_embedder(self.settings)
            return self._embedder

    def _embedding_signature(self) -> tuple[str, int]:
        embedder = self.embedder
        return embedder.model_id, embedder.dim

    # -- knowledge bases ----------------------------------------------------------------------

    def list_kbs(self) -> list[KnowledgeBase]:
        return self.kbs.list()

    def create_kb(self, name: str) -> KnowledgeBase:
        return self.kbs.create(name)

    def rename_kb(self, old: str, new: str) -> KnowledgeBase:
        return self.kbs.rename(old, new)

    def delete_kb(self, name: str) -> None:
        self.kbs.delete(name)

    def load_all(self) -> None:
        """Collections come back released after a restart: load them so the first search is fast."""
        for kb in self.kbs.list():
            try:
                self.store.load(kb.collection)
            except DocLensError as exc:
                log.warning("could not load knowledge base %r: %s", kb.name, exc)

    def open_kb(self, name: str, check_model: bool = True) -> OpenKB:
        return self.kbs.open(name, check_model=check_model)

    # -- documents ----------------------------------------------------------------------------

    def documents(self, kb_name: str) -> list[DocumentInfo]:
        return self.open_kb(kb_name, check_model=False).registry.documents()

    def find_document(self, kb: OpenKB, file: str) -> DocumentInfo:
        doc = kb.registry.document_by_file(file) or kb.registry.document_by_file(Path(file).name)
        if doc is None:
            raise KnowledgeBaseError(f"document '{file}' is not in knowledge base '{kb.name}'")
        return doc

    def delete_document(self, kb_name: str, file: str) -> DocumentInfo:
        kb = self.open_kb(kb_name, check_model=False)
        doc = self.find_document(kb, file)
        self._remove_document(kb, doc.doc_id)
        log.info("deleted %s from knowledge base %r", doc.file, kb.name)
        return doc

    def _remove_document(self, kb: OpenKB, doc_id: str) -> None:
        """Rows first, then files, then the registry entry: a crash in between is cleaned up at start."""
        self.store.delete_documents(kb.collection, [doc_id])
        shutil.rmtree(kb.folder / "figures" / doc_id, ignore_errors=True)
        kb.registry.remove_document(doc_id)

    def figures(self, kb_name: str, file: Optional[str] = None) -> list[Figure]:
        kb = self.open_kb(kb_name, check_model=False)
        doc_id = self.find_document(kb, file).doc_id if file else None
        return kb.registry.figures(doc_id)

    def figure(self, kb_name: str, figure_id: str) -> Figure:
        figure = next((f for f in self.figures(kb_name) if f.id == figure_id), None)
        if figure is None:
            raise KnowledgeBaseError(f"figure '{figure_id}' is not in knowledge base '{kb_name}'")
        return figure

    def recover(self) -> None:
        """Remove what a crash left half-done: documents still pending get no rows, files or entries."""
        for kb in self.kbs.list():
            registry = self.kbs.registry(kb.collection)
            pending = registry.pending_ids()
            if not pending:
                continue
            log.warning("knowledge base %r: removing %d unfinished document(s) from an interrupted upload",
                        kb.name, len(pending))
            opened = OpenKB(kb.name, kb.collection, self.kbs.folder(kb.collection), None, registry)  # type: ignore[arg-type]
            for doc_id in pending:
                self._remove_document(opened, doc_id)

    # -- ingestion ----------------------------------------------------------------------------

    def ingest(self, kb_name: str, paths: Sequence[Path], progress: Optional[ProgressCallback] = None,
               cancel: Optional[threading.Event] = None, display_names: Optional[Sequence[str]] = None
               ) -> list[IngestResult]:
        """Add PDFs (files, or folders searched recursively) to a knowledge base, one result per file.

        ``display_names`` (same length as ``paths``) names uploaded temp files as the user's file names.
        Setting ``cancel`` stops between pages; the current document is rolled back (status "cancelled")
        and the files not yet started are reported as cancelled too. A failed file never stops the others.
        """
        raise NotImplementedError

    # -- questions ----------------------------------------------------------------------------

    def search(self, kb_name: str, question: str, doc: Optional[str] = None, mode: str = "rerank",
               top: Optional[int] = None) -> SearchResult:
        """Ranked sources (no LLM). ``doc``: a file name to search only that document."""
        raise NotImplementedError

    def ask_stream(self, kb_name: str, question: str, history: Optional[list[dict[str, str]]] = None,
                   doc: Optional[str] = None, figure_id: Optional[str] = None) -> Iterator[Union[str, Answer]]:
        """Stream an answer: text deltas (str) as they arrive, then the final ``Answer`` as the last item.

        ``history``: earlier turns as [{"role": "user"|"assistant", "content": str}], used to make the
        question standalone. ``figure_id``: ask about that figure with the vision model (one question).
        Model failures never raise: they end in an extractive answer with ``notice`` saying why.
        """
        raise NotImplementedError

    def ask(self, kb_name: str, question: str, history: Optional[list[dict[str, str]]] = None,
            doc: Optional[str] = None, figure_id: Optional[str] = None) -> Answer:
        answer = None
        for update in self.ask_stream(kb_name, question, history=history, doc=doc, figure_id=figure_id):
            if isinstance(update, Answer):
                answer = update
        assert answer is not None
        return answer

    def summary(self, kb_name: str, file: str, refresh: bool = False) -> str:
        """A document's Markdown summary (LaTeX kept), generated once and cached; first passages without a model."""
        raise NotImplementedError

    def page_image(self, kb_name: str, file: str, page: int, highlight: str = "") -> Path:
        """A PNG of one page with the given chunk text framed, rendered into the KB's folder (cached)."""
        raise NotImplementedError

    def check_llm(self, vision: bool = False) -> tuple[bool, str]:
        """Try the chat (or vision) endpoint once: (ok, one-line message without the key)."""
        raise NotImplementedError

    def check_embedding(self) -> tuple[bool, str]:
        """Embed one text with the configured embedding provider: (ok, message)."""
        raise NotImplementedError
