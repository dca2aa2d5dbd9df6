"""The one facade the UI, the CLI and the tests call. Nothing above this layer touches Milvus or a model."""

from __future__ import annotations

import functools
import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Optional, Sequence

from backend import migration, text
from backend.asking import search_scope
from backend.errors import DocLensError
from backend.knowledge_bases import KnowledgeBases, OpenKB
from backend.llm_clients import LLMClients
from backend.model_preparation import ModelState, watch_model_preparation  # noqa: F401 - the CLI's bar
from backend.quality_checks import QualityChecks
from backend.retrieval.bilingual import term_list as warm_term_list
from backend.retrieval.doc_scope import Catalogs
from backend.settings import LLMSettings, Settings
from backend.store import migration as old_store
from backend.store.base import ChunkRow
from backend.store.milvus import MilvusStore
from backend.types import (
    Answer,
    AnswerUpdate,
    DocumentInfo,
    Figure,
    IngestResult,
    KnowledgeBase,
    ProgressCallback,
    SearchResult,
)

if TYPE_CHECKING:
    from backend.embedding.base import Embedder  # the embedding package is a heavy import: loaded on first use

log = logging.getLogger(__name__)


class DocLens(QualityChecks):
    """Everything a user can do, as plain method calls returning plain result types."""

    def __init__(self, settings: Settings):
        self.settings = settings
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        token = settings.milvus.token.get_secret_value() if settings.milvus.token else ""
        if settings.is_milvus_lite:  # a Lite 3.x store: moved aside, its PDFs are indexed again (migrate)
            old_store.set_aside(settings.data_dir, Path(settings.milvus_uri))
        self.store = MilvusStore(settings.milvus_uri, token=token, index_type=settings.milvus.index_type)
        self.kbs = KnowledgeBases(self.store, settings.data_dir, self._embedding_signature)
        self._embedder: Optional[Embedder] = None
        self._embedder_lock = threading.Lock()
        self._preparing: Optional[threading.Thread] = None
        self._preparing_lock = threading.Lock()
        self._ingest_lock = threading.Lock()
        self._retriever = None
        self._catalogs = Catalogs()  # what each document can be called, for questions that name one
        self._llms = LLMClients(settings)
        self.model_state = ModelState()
        text.use_cache_dir(settings.data_dir / "cache")
        self.recover()

    def close(self) -> None:
        self._llms.close()
        self.store.close()

    def __enter__(self) -> DocLens:
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
        self._llms.reset(settings)

    # -- models -------------------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        with self._embedder_lock:
            if self._embedder is None:
                from backend.embedding import create_embedder  # heavy import: only when needed

                self._embedder = create_embedder(self.settings)
            return self._embedder

    def prepare_models_in_background(self) -> threading.Thread:
        """Load (and on first use build) the embedding model while the app starts, not on the first click.
        Once per service: a second call returns the first call's thread."""
        with self._preparing_lock:
            if self._preparing is None:
                self.model_state.started(self.settings)  # before it returns: a page drawn next shows the banner
                self._preparing = threading.Thread(
                    target=self._prepare_models, name="doclens-prepare-models", daemon=True
                )
                self._preparing.start()
            return self._preparing

    def _prepare_models(self) -> None:
        text.warm_up()
        warm_term_list(self.settings.model_cache_dir)  # not the first cross-lingual question's
        try:
            _ = self.embedder  # loads (or builds) the model
        except DocLensError as exc:  # shown again, with the same reason, when a search or upload needs it
            log.warning("embedding model not ready: %s", exc)
            self.model_state.finished(str(exc))
        else:
            self._warm_question_path()
            self.model_state.finished()
            self._warm_reference_questions()

    def _warm_question_path(self) -> None:
        """What a first question after a start would set up: the retriever (its modules import in 0.2 s)
        and the embedder's kernels for a question's shape (0.6 s on OpenVINO)."""
        try:
            _ = self.retriever
            self.embedder.warm_up()
        except DocLensError as exc:  # the first question then pays for it, and says why if it fails
            log.warning("question path not warmed up: %s", exc)

    def _warm_reference_questions(self) -> None:
        """The first question across languages would embed the hubness references (about 1 s): done here,
        after the banner says the models are ready, so a first question in the documents' language never waits."""
        try:
            for lang in ("zh", "en"):
                self.retriever.hubs.references(lang)
        except DocLensError as exc:
            log.warning("hubness references not prepared: %s", exc)

    def _embedding_signature(self) -> tuple[str, int]:
        """What a knowledge base records; known before the model is ready for bundled models, so creating
        one does not wait for a first start's build."""
        from backend.embedding.factory import known_signature

        known = None if self._embedder is not None else known_signature(self.settings)
        if known is not None:
            return known
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

    @staticmethod
    def find_document(kb: OpenKB, file: str) -> DocumentInfo:
        return kb.find_document(file)

    def delete_document(self, kb_name: str, file: str) -> DocumentInfo:
        kb = self.open_kb(kb_name, check_model=False)
        doc = kb.find_document(file)
        kb.remove_document(doc.doc_id)
        log.info("deleted %s from knowledge base %r", doc.file, kb.name)
        return doc

    def figures(self, kb_name: str, file: Optional[str] = None) -> list[Figure]:
        kb = self.open_kb(kb_name, check_model=False)
        doc_id = kb.find_document(file).doc_id if file else None
        return kb.registry.figures(doc_id)

    def figure(self, kb_name: str, figure_id: str) -> Figure:
        return self.open_kb(kb_name, check_model=False).figure(figure_id)

    def recover(self) -> None:
        """Remove what a crash left half-done: documents still pending get no rows, files or entries."""
        self.kbs.recover()

    # -- ingestion ----------------------------------------------------------------------------

    def ingest(
        self,
        kb_name: str,
        paths: Sequence[Path],
        progress: Optional[ProgressCallback] = None,
        cancel: Optional[threading.Event] = None,
        display_names: Optional[Sequence[str]] = None,
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
                return Ingestor(self.settings, self.embedder).run(kb, items, progress, cancel)
            finally:  # fresh rows go into indexed segments now, not on the next restart
                self._seal(kb)

    def _seal(self, kb: OpenKB) -> None:
        try:
            self.store.seal(kb.collection)
        except DocLensError as exc:  # a knowledge base deleted meanwhile has nothing left to seal
            log.info("knowledge base %r not sealed: %s", kb.name, exc)

    # -- questions ----------------------------------------------------------------------------

    def search(
        self,
        kb_name: str,
        question: str,
        doc: Optional[str] = None,
        mode: str = "rerank",
        top: Optional[int] = None,
        exclude: Sequence[str] = (),
    ) -> SearchResult:
        """Ranked sources (no LLM). ``doc``: a file name to search only that document; ``exclude``: file
        names to leave out (the evaluation uses it to ask questions whose answer is not in the library)."""
        kb = self.open_kb(kb_name)
        return self._search(kb, question, doc, mode, top, exclude)

    def _search(
        self,
        kb: OpenKB,
        question: str,
        doc: Optional[str],
        mode: str,
        top: Optional[int],
        exclude: Sequence[str] = (),
        said: Optional[str] = None,
    ) -> SearchResult:
        """``said``: for a model's rewrite of the question, what the user wrote (the question and the
        conversation); the rewrite is limited to a document only when the user named it there too."""
        try:
            return self._search_open(kb, question, doc, mode, top, exclude, said)
        except DocLensError:
            self.kbs.check_exists(kb)  # "was deleted", not the store's "collection ... does not exist"
            raise

    def _search_open(
        self,
        kb: OpenKB,
        question: str,
        doc: Optional[str],
        mode: str,
        top: Optional[int],
        exclude: Sequence[str],
        said: Optional[str] = None,
    ) -> SearchResult:
        if not question or not question.strip():
            raise DocLensError("the question is empty")
        if kb.registry.totals()[0] == 0:
            raise DocLensError(f"knowledge base '{kb.name}' has no documents yet: upload PDFs first")
        where, scope = search_scope(kb, self._catalogs, question, doc, exclude, said)
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
        return self._llms.server()

    def llm_for(self, profile: Optional[LLMSettings] = None):
        """The client for one session's own model profile, or the server's (None): see ``LLMClients``."""
        return self._llms.for_profile(profile)

    def _translate(self, question: str) -> Optional[str]:
        from backend.retrieval.search import translation_prompt

        return self.llm.chat(translation_prompt(question), max_tokens=200, temperature=0.0)

    def ask_stream(
        self,
        kb_name: str,
        question: str,
        history: Optional[list[dict[str, str]]] = None,
        doc: Optional[str] = None,
        figure_id: Optional[str] = None,
        llm_profile: Optional[LLMSettings] = None,
    ) -> Iterator[AnswerUpdate]:
        """Stream an answer: an ``AnswerUpdate`` per text delta as it arrives, then the last one, ``done``,
        with the final ``Answer``.

        ``history``: earlier turns as [{"role": "user"|"assistant", "content": str}], used to make the
        question standalone. ``figure_id``: ask about that figure with the vision model (one question).
        Model failures never raise: they end in an extractive answer with ``notice`` saying why.
        ``llm_profile``: this caller's own model (see ``llm_for``); None: the server's.
        """
        from backend import asking

        kb = self.open_kb(kb_name)
        llm = self.llm_for(llm_profile)
        search = functools.partial(self._rerank_search, kb)
        if figure_id:
            answer = asking.ask_about_figure(kb, llm, search, question, figure_id, self.settings.llm.context_sources)
            yield from asking.figure_answer_updates(answer)
            return
        yield from asking.stream_answer(llm, self.settings, search, question, history, doc)

    def _rerank_search(
        self, kb: OpenKB, question: str, doc: Optional[str], top: int, said: Optional[str] = None
    ) -> SearchResult:
        return self._search(kb, question, doc, "rerank", top, said=said)

    def ask(
        self,
        kb_name: str,
        question: str,
        history: Optional[list[dict[str, str]]] = None,
        doc: Optional[str] = None,
        figure_id: Optional[str] = None,
        llm_profile: Optional[LLMSettings] = None,
    ) -> Answer:
        answer = None
        for update in self.ask_stream(
            kb_name, question, history=history, doc=doc, figure_id=figure_id, llm_profile=llm_profile
        ):
            answer = update.answer or answer
        assert answer is not None
        return answer

    def summary(self, kb_name: str, file: str, refresh: bool = False) -> str:
        """A document's Markdown summary (LaTeX kept), generated once and cached; first passages without a model."""
        from backend.asking import document_summary

        kb = self.open_kb(kb_name, check_model=False)
        return document_summary(kb, self.store, self.llm, self.settings.llm_configured, file, refresh)

    def page_image(self, kb_name: str, file: str, page: int, highlight: str = "") -> Path:
        """A PNG of one page with the given chunk text framed, rendered into the KB's folder (cached)."""
        from backend.documents.preview import ocr_line_reader, render_page

        kb = self.open_kb(kb_name, check_model=False)
        doc = kb.find_document(file)
        pdf = kb.original_pdf(doc.doc_id)
        if not pdf.exists():
            raise DocLensError(f"{doc.file}: the original PDF is not kept for this document; upload it again")
        return render_page(pdf, page, highlight, kb.preview_dir(doc.doc_id), ocr_line_reader(self.settings))

    # -- quality checks (evaluate, selftest, benchmark_ingest, calibrate: see QualityChecks) ----

    def indexed_chunks(self, kb_name: str) -> list[ChunkRow]:
        """The stored chunks of the knowledge base's complete documents (what the self-test asks back)."""
        kb = self.open_kb(kb_name)
        complete = {d.doc_id for d in kb.registry.documents(status="complete")}
        return [c for c in self.store.chunks(kb.collection) if c.doc_id in complete]

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
