"""The one facade the UI, the CLI and the tests call. Nothing above this layer touches Milvus or a model."""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from pathlib import Path
from typing import Iterator, Optional, Sequence, Union

from backend import migration
from backend.errors import DocLensError, KnowledgeBaseError
from backend.knowledge_bases import KnowledgeBases, OpenKB
from backend.settings import LLMSettings, Settings
from backend.retrieval import text
from backend.retrieval.doc_scope import Catalogs, scope_for
from backend.store import migration as old_store
from backend.store.base import SearchFilter
from backend.store.milvus import MilvusStore
from backend.types import (Answer, DocumentInfo, Figure, IngestResult, KnowledgeBase, ProgressCallback,
                           SearchResult)

log = logging.getLogger(__name__)

MAX_SESSION_LLMS = 32  # clients kept for per-session model profiles; the oldest is closed beyond this


class ModelState:
    """Whether the embedding model is ready: the UI shows a banner while it is being prepared, the
    server log (the CLI's console) a line every ``REPORT_SECONDS``."""

    REPORT_SECONDS = 15.0

    def __init__(self) -> None:
        self.preparing = False
        self.error = ""
        self.since = 0.0
        self._done = threading.Event()

    def started(self) -> None:
        self.preparing, self.error, self.since = True, "", time.monotonic()
        self._done.clear()
        log.info("preparing the embedding model (the first start builds it once: a few minutes)")
        threading.Thread(target=self._report, name="doclens-model-progress", daemon=True).start()

    def finished(self, error: str = "") -> None:
        seconds = self.seconds
        self.preparing, self.error = False, error
        self._done.set()
        if not error:
            log.info("embedding model ready after %.0f s", seconds)

    def _report(self) -> None:
        while not self._done.wait(self.REPORT_SECONDS):
            log.info("still preparing the embedding model (%.0f s so far)", self.seconds)

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.since if self.preparing else 0.0


class DocLens:
    """Everything a user can do, as plain method calls returning plain result types."""

    def __init__(self, settings: Settings):
        self.settings = settings
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        token = settings.milvus.token.get_secret_value() if settings.milvus.token else ""
        if settings.is_milvus_lite:  # a Lite 3.x store: moved aside, its PDFs are indexed again (migrate)
            old_store.set_aside(settings.data_dir, Path(settings.milvus_uri))
        self.store = MilvusStore(settings.milvus_uri, token=token, index_type=settings.milvus.index_type)
        self.kbs = KnowledgeBases(self.store, settings.data_dir, self._embedding_signature)
        self._embedder = None
        self._embedder_lock = threading.Lock()
        self._ingest_lock = threading.Lock()
        self._retriever = None
        self._catalogs = Catalogs()  # what each document can be called, for questions that name one
        self._llm = None
        self.model_state = ModelState()
        self._session_llms: dict[tuple, object] = {}  # per-session LLM profiles (llm_for), newest last
        text.configure(settings.data_dir / "cache")
        self.recover()

    def close(self) -> None:
        for client in [self._llm, *self._drop_session_llms()]:
            if client is not None:
                client.close()
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
        with self._embedder_lock:
            if embedding_changed:
                self._embedder = None
            self._retriever = None  # rebuilt with the new settings and models on next use
            old_llm, self._llm = self._llm, None
        for client in [old_llm, *self._drop_session_llms()]:
            if client is not None:
                client.close()

    # -- models -------------------------------------------------------------------------------

    @property
    def embedder(self):
        with self._embedder_lock:
            if self._embedder is None:
                from backend.embedding import create_embedder  # heavy import: only when needed
                self._embedder = create_embedder(self.settings)
            return self._embedder

    def prepare_models_in_background(self) -> threading.Thread:
        """Load (and on first use build) the embedding model while the app starts, not on the first click."""
        def prepare() -> None:
            self.model_state.started()
            text.query_terms("预热 warm-up")  # loads jieba's dictionary (~4 s) now, not in the first question
            try:
                self.embedder
            except DocLensError as exc:  # shown again, with the same reason, when a search or upload needs it
                log.warning("embedding model not ready: %s", exc)
                self.model_state.finished(str(exc))
            else:
                self.model_state.finished()

        thread = threading.Thread(target=prepare, name="doclens-prepare-models", daemon=True)
        thread.start()
        return thread

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
        """Collections come back released after a restart: load them and build their search indexes
        now, so the first question does not (Milvus Lite 2.5 reads every row back into memory: ~15 s at 100k)."""
        kbs = self.kbs.list()
        for i, kb in enumerate(kbs, 1):
            started = time.perf_counter()
            try:
                self.store.warm(kb.collection)
                self._catalogs.get(kb.collection, self.kbs.registry(kb.collection))  # 1-2 s at 1,500 documents
            except DocLensError as exc:
                log.warning("could not load knowledge base %r: %s", kb.name, exc)
                continue
            log.info("knowledge base %r ready (%d of %d, %.1f s)", kb.name, i, len(kbs), time.perf_counter() - started)
        if migration.pending(self):
            self.migrate()

    def migrate(self, progress: Optional[ProgressCallback] = None) -> list[migration.MigratedKB]:
        """Index the knowledge bases of a Milvus Lite 3.x data folder again from their PDFs (see backend.migration)."""
        return migration.migrate(self, progress)

    def load_all_in_background(self) -> threading.Thread:
        """``load_all`` while the app starts: a question asked meanwhile loads its own knowledge base."""
        thread = threading.Thread(target=self.load_all, name="doclens-load-kbs", daemon=True)
        thread.start()
        return thread

    def open_kb(self, name: str, check_model: bool = True) -> OpenKB:
        return self.kbs.open(name, check_model=check_model)

    # -- documents ----------------------------------------------------------------------------

    def documents(self, kb_name: str) -> list[DocumentInfo]:
        return self.open_kb(kb_name, check_model=False).registry.documents()

    def find_document(self, kb: OpenKB, file: str) -> DocumentInfo:
        from backend.ingestion import clean_file_name  # the name as stored: a long one is shortened
        doc = kb.registry.document_by_file(file) or kb.registry.document_by_file(clean_file_name(file))
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
        from backend.ingestion import remove_document_files
        remove_document_files(self.store, kb, doc_id)

    def figures(self, kb_name: str, file: Optional[str] = None) -> list[Figure]:
        kb = self.open_kb(kb_name, check_model=False)
        doc_id = self.find_document(kb, file).doc_id if file else None
        return kb.registry.figures(doc_id)

    def figure(self, kb_name: str, figure_id: str) -> Figure:
        return self._find_figure(self.open_kb(kb_name, check_model=False), figure_id)

    @staticmethod
    def _find_figure(kb: OpenKB, figure_id: str) -> Figure:
        figure = next((f for f in kb.registry.figures() if f.id == figure_id), None)
        if figure is None:
            raise KnowledgeBaseError(f"figure '{figure_id}' is not in knowledge base '{kb.name}'")
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
        from backend.ingestion import Ingestor, collect_uploads
        kb = self.open_kb(kb_name)
        items = collect_uploads(paths, display_names)
        if not items:
            raise DocLensError("no PDF files found in " + ", ".join(str(p) for p in paths))
        with self._ingest_lock, self.kbs.writing(kb):  # one upload at a time per server and per knowledge base
            try:
                return Ingestor(self.settings, self.store, self.embedder).run(kb, items, progress, cancel)
            finally:  # fresh rows go into indexed segments now, not on the next restart
                self._seal(kb)

    def _seal(self, kb: OpenKB) -> None:
        try:
            self.store.seal(kb.collection)
        except DocLensError as exc:  # a knowledge base deleted meanwhile has nothing left to seal
            log.info("knowledge base %r not sealed: %s", kb.name, exc)

    # -- questions ----------------------------------------------------------------------------

    def search(self, kb_name: str, question: str, doc: Optional[str] = None, mode: str = "rerank",
               top: Optional[int] = None, exclude: Sequence[str] = ()) -> SearchResult:
        """Ranked sources (no LLM). ``doc``: a file name to search only that document; ``exclude``: file
        names to leave out (the evaluation uses it to ask questions whose answer is not in the library)."""
        kb = self.open_kb(kb_name)
        return self._search(kb, question, doc, mode, top, exclude)

    def _search(self, kb: OpenKB, question: str, doc: Optional[str], mode: str, top: Optional[int],
                exclude: Sequence[str] = (), said: Optional[str] = None) -> SearchResult:
        """``said``: for a model's rewrite of the question, what the user wrote (the question and the
        conversation); the rewrite is limited to a document only when the user named it there too."""
        try:
            return self._search_open(kb, question, doc, mode, top, exclude, said)
        except DocLensError:
            self.kbs.check_exists(kb)  # "was deleted", not the store's "collection ... does not exist"
            raise

    def _search_open(self, kb: OpenKB, question: str, doc: Optional[str], mode: str, top: Optional[int],
                     exclude: Sequence[str], said: Optional[str] = None) -> SearchResult:
        if not question or not question.strip():
            raise DocLensError("the question is empty")
        if kb.registry.totals()[0] == 0:
            raise DocLensError(f"knowledge base '{kb.name}' has no documents yet: upload PDFs first")
        include = [self.find_document(kb, doc).doc_id] if doc else None
        excluded = kb.registry.pending_ids() + [self.find_document(kb, name).doc_id for name in exclude]
        where = SearchFilter(include_doc_ids=include, exclude_doc_ids=excluded)
        catalog = self._catalogs.get(kb.collection, kb.registry, excluded)
        scope = scope_for(question, catalog, include and include[0])
        if scope is not None and said is not None and not _named_by_user(scope, scope_for(said, catalog)):
            scope = None  # the model named that document, not the user: it must not narrow the search
        return self.retriever.search(kb.collection, question.strip(), where, mode=mode, top=top, scope=scope)

    @property
    def retriever(self):
        from backend.retrieval.search import Retriever
        with self._embedder_lock:
            retriever = self._retriever
        if retriever is None:
            translator = self._translate if self.settings.llm_configured else None
            retriever = Retriever(self.settings, self.store, self.embedder, translator=translator)
            with self._embedder_lock:
                self._retriever = retriever
        return retriever

    @property
    def llm(self):
        from backend.llm import LLMClient
        with self._embedder_lock:
            if self._llm is None:
                self._llm = LLMClient(self.settings)
            return self._llm

    def llm_for(self, profile: Optional[LLMSettings] = None):
        """The client for one session's own model profile (endpoint, model, key), or the server's (None).

        A profile only ever talks to its own base URL with its own key; the UI builds it (Settings tab)
        and passes it with each call, so one user's choice never changes another's.
        """
        if profile is None:
            return self.llm
        from backend.llm import LLMClient
        secret = profile.api_key.get_secret_value() if profile.api_key else ""
        key = tuple(profile.model_dump(mode="json").items()) + (hashlib.sha256(secret.encode()).hexdigest(),)
        with self._embedder_lock:
            client = self._session_llms.pop(key, None) or LLMClient(
                self.settings.model_copy(update={"llm": profile}))
            self._session_llms[key] = client
            evicted = list(self._session_llms)[:-MAX_SESSION_LLMS]
            old = [self._session_llms.pop(k) for k in evicted]
        for stale in old:
            stale.close()
        return client

    def _drop_session_llms(self) -> list:
        with self._embedder_lock:
            clients, self._session_llms = list(self._session_llms.values()), {}
        return clients

    def _translate(self, question: str) -> Optional[str]:
        from backend.retrieval.search import translation_prompt
        return self.llm.chat(translation_prompt(question), max_tokens=200, temperature=0.0)

    def ask_stream(self, kb_name: str, question: str, history: Optional[list[dict[str, str]]] = None,
                   doc: Optional[str] = None, figure_id: Optional[str] = None,
                   llm_profile: Optional[LLMSettings] = None) -> Iterator[Union[str, Answer]]:
        """Stream an answer: text deltas (str) as they arrive, then the final ``Answer`` as the last item.

        ``history``: earlier turns as [{"role": "user"|"assistant", "content": str}], used to make the
        question standalone. ``figure_id``: ask about that figure with the vision model (one question).
        Model failures never raise: they end in an extractive answer with ``notice`` saying why.
        ``llm_profile``: this caller's own model (see ``llm_for``); None: the server's.
        """
        from backend import answering
        kb = self.open_kb(kb_name)
        llm = self.llm_for(llm_profile)
        if figure_id:
            answer = self._ask_about_figure(kb, question, figure_id, llm)
            yield answer.answer
            yield answer
            return
        standalone = answering.condense_question(llm, history, question) if history else question
        top = max(self.settings.retrieval.top_k, self.settings.llm.context_sources)
        result = self._search(kb, question, doc, "rerank", top)
        if standalone.strip() != question.strip():
            # The rewrite helps follow-ups ("and its energy?") but must not take over: a model that
            # rewrites badly would otherwise decide alone what is found. The user's words weigh more.
            from backend.retrieval.fusion import fuse_results
            said = "\n".join([*(turn.get("content") or "" for turn in answering.normalize_history(history)), question])
            result = fuse_results(result, self._search(kb, standalone, doc, "rerank", top, said=said), top)
        for update in answering.answer_stream(llm, question, result.sources, result.confidence, history=history,
                                              searched_question=standalone):
            if update.done and update.answer is not None:
                update.answer.searched_in = result.searched_in
                yield update.answer
            elif update.delta:
                yield update.delta

    def _ask_about_figure(self, kb: OpenKB, question: str, figure_id: str, llm) -> Answer:
        from backend import answering
        figure = self._find_figure(kb, figure_id)
        page_text = kb.registry.page_text(figure.doc_id, figure.page)
        document_text = "\n\n".join(text for _, text in kb.registry.document_text(figure.doc_id))
        context = answering.figure_context(figure, page_text, document_text)
        result = self._search(kb, question, figure.file, "rerank", self.settings.llm.context_sources)
        try:
            image = Path(figure.path).read_bytes()
        except OSError as exc:
            log.warning("figure image %s unreadable: %s", figure.path, exc)
            image = None
        return answering.answer_about_figure(llm, question, figure, image, None, context, result.sources,
                                             result.confidence)

    def ask(self, kb_name: str, question: str, history: Optional[list[dict[str, str]]] = None,
            doc: Optional[str] = None, figure_id: Optional[str] = None,
            llm_profile: Optional[LLMSettings] = None) -> Answer:
        answer = None
        for update in self.ask_stream(kb_name, question, history=history, doc=doc, figure_id=figure_id,
                                      llm_profile=llm_profile):
            if isinstance(update, Answer):
                answer = update
        assert answer is not None
        return answer

    def summary(self, kb_name: str, file: str, refresh: bool = False) -> str:
        """A document's Markdown summary (LaTeX kept), generated once and cached; first passages without a model."""
        from backend import answering
        from backend.errors import LLMError
        kb = self.open_kb(kb_name, check_model=False)
        doc = self.find_document(kb, file)
        cached = None if refresh else kb.registry.summary(doc.doc_id)
        if cached:
            return cached
        pages = [text for _, text in kb.registry.document_text(doc.doc_id)]
        try:
            summary = answering.summarize_document(self.llm, doc.file, pages)
        except LLMError as exc:
            reason = "" if not self.settings.llm_configured else f"The model failed ({exc})"
            first = [c.content for c in self.store.chunks(kb.collection, doc_id=doc.doc_id, limit=3)]
            return answering.fallback_summary(doc.file, first, reason=reason)
        kb.registry.save_summary(doc.doc_id, summary)
        return summary

    def page_image(self, kb_name: str, file: str, page: int, highlight: str = "") -> Path:
        """A PNG of one page with the given chunk text framed, rendered into the KB's folder (cached)."""
        from backend.documents.preview import render_page
        kb = self.open_kb(kb_name, check_model=False)
        doc = self.find_document(kb, file)
        pdf = kb.folder / "files" / f"{doc.doc_id}.pdf"
        if not pdf.exists():
            raise DocLensError(f"{doc.file}: the original PDF is not kept for this document; upload it again")
        return render_page(pdf, page, highlight, kb.folder / "previews" / doc.doc_id)

    def check_llm(self, vision: bool = False, llm_profile: Optional[LLMSettings] = None) -> tuple[bool, str]:
        """Try the chat (or vision) endpoint once: (ok, one-line message without the key)."""
        if not (llm_profile or self.settings.llm).configured:
            return False, "no model configured: set llm.base_url and llm.model (and DOCLENS_LLM_API_KEY)"
        return self.llm_for(llm_profile).check_connection(vision=vision)

    def check_embedding(self) -> tuple[bool, str]:
        """Embed one text with the configured embedding provider: (ok, message)."""
        try:
            embedder = self.embedder
            embedder.embed_queries(["connection test"])
        except DocLensError as exc:
            return False, str(exc)
        return True, f"{embedder.model_id}: OK ({embedder.dim} dimensions)"


def _named_by_user(scope, said_scope) -> bool:
    """Every document the rewrite is limited to was named in what the user wrote."""
    return said_scope is not None and set(scope.doc_ids) <= set(said_scope.doc_ids)
