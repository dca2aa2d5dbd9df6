"""The one facade the UI, the CLI and the quality checks call. It delegates: the knowledge bases keep the
books (``backend.knowledge_bases``), the ingestor turns files into rows (``backend.ingestion``), the
retriever finds the sources (``backend.retrieval``) and the answering package turns them into an answer
(``backend.answering``). Nothing above this layer touches Milvus or a model."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Collection, Iterator, Optional, Sequence

from backend import text
from backend.documents.equations import FORMULA_IMAGE  # noqa: F401 - the page words the parser's mark (ui.latex)
from backend.embedding.preparation import (  # noqa: F401 - the CLI's bar and the page's banner
    READY_STEP,
    START_STEP,
    ModelState,
    watch_model_preparation,
)
from backend.errors import DocLensError, LLMError
from backend.ingestion.resume import InterruptedUploads
from backend.knowledge_bases import old_folders, reindex
from backend.knowledge_bases.audit import LOCAL, MACHINE_ACTORS, RESUME  # noqa: F401 - names no login may take
from backend.knowledge_bases.library_access import LibraryAccess
from backend.knowledge_bases.lifecycle import KnowledgeBases
from backend.knowledge_bases.names import name_list
from backend.knowledge_bases.open_kb import OpenKB
from backend.knowledge_bases.roles import Role, Roles
from backend.knowledge_bases.trash import AuditedChanges, Trash
from backend.llm.clients import LLMClients
from backend.settings import LLMSettings, Settings
from backend.store.base import ChunkRow
from backend.store.milvus import MilvusStore
from backend.types import Answer, AnswerUpdate, IngestResult, ProgressCallback, SearchResult

if TYPE_CHECKING:  # heavy imports (torch, openvino, the OpenAI SDK): loaded on first use
    from backend.embedding.base import Embedder
    from backend.ingestion.sync_plan import HashCache, SyncAction, SyncPlan
    from backend.llm.client import LLMClient
    from backend.retrieval.retriever import Retriever

log = logging.getLogger(__name__)


class DocLens(AuditedChanges, LibraryAccess, InterruptedUploads):
    """Everything a user can do, as plain method calls returning plain result types (deleting, restoring
    and renaming knowledge bases and documents: ``AuditedChanges``; listing, reading and sharing them:
    ``LibraryAccess``; finishing uploads a restart cut short: ``InterruptedUploads``). ``who``: the caller's
    login, checked against its role on each knowledge base."""

    def __init__(self, settings: Settings):
        self.settings = settings
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        token = settings.milvus.token.get_secret_value() if settings.milvus.token else ""
        if settings.is_milvus_lite:  # a Lite 3.x store: moved aside, its PDFs are indexed again (migrate)
            old_folders.set_aside(settings.data_dir, Path(settings.milvus_uri))
        self.store = MilvusStore(settings.milvus_uri, token=token, index_type=settings.milvus.index_type)
        self.kbs = KnowledgeBases(self.store, settings.data_dir, self._embedding_signature)
        self.trash = Trash(self.kbs, settings.data_dir, lambda: self.settings.trash.retention_days)
        self.roles = Roles(settings.data_dir)  # enforced once the web app has logins (ui/app.py)
        self._embedder: Optional[Embedder] = None
        self._embedder_lock = threading.Lock()
        self._preparing: Optional[threading.Thread] = None
        self._preparing_lock = threading.Lock()
        self._ingest_lock = threading.Lock()
        self._retriever: Optional[Retriever] = None
        self._llms = LLMClients(settings)
        self.model_state = ModelState()
        self._loading: set[str] = set()  # knowledge bases load_all has not loaded yet
        self._loading_lock = threading.Lock()
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
                from backend.embedding.factory import create_embedder  # heavy import: only when needed

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
        self.retriever.warm_term_list()  # not the first cross-lingual question's
        try:
            _ = self.embedder  # loads (or builds) the model
        except DocLensError as exc:  # shown again, with the same reason, when a search or upload needs it
            log.warning("embedding model not ready: %s", exc)
            self.model_state.finished(str(exc))
            return
        try:  # what a first question would set up: the question path's kernels
            self.retriever.warm_up()
        except DocLensError as exc:  # the first question then pays for it, and says why if it fails
            log.warning("question path not warmed up: %s", exc)
        self.model_state.finished()
        try:  # after the banner says the models are ready: a first question in the documents' language never waits
            self.retriever.prepare_references()
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

    @property
    def retriever(self) -> Retriever:
        """Made on first use (its modules import in 0.2 s); the model is loaded when a search needs it."""
        from backend.retrieval.retriever import Retriever

        with self._embedder_lock:
            if self._retriever is None:
                translator = self._translate if self.settings.llm_configured else None
                self._retriever = Retriever(self.settings, self.store, lambda: self.embedder, translator=translator)
            return self._retriever

    @property
    def llm(self) -> LLMClient:
        return self._llms.server()

    def llm_for(self, profile: Optional[LLMSettings] = None) -> LLMClient:
        """The client for one session's own model profile, or the server's (None): see ``LLMClients``."""
        return self._llms.for_profile(profile)

    def _translate(self, question: str) -> Optional[str]:
        from backend.answering.prompts import translation_prompt

        return self.llm.chat(translation_prompt(question), max_tokens=200, temperature=0.0)

    # -- knowledge bases ----------------------------------------------------------------------

    def load_all(self) -> None:
        """Collections come back released after a restart: load them and build their search indexes
        now, so the first question does not (Milvus Lite 2.5 reads every row back into memory: ~15 s at 100k)."""
        kbs = self.kbs.list()
        with self._loading_lock:
            self._loading.update(kb.name for kb in kbs)
        for i, kb in enumerate(kbs, 1):
            started = time.perf_counter()
            try:
                self.store.warm(kb.collection)
                self.retriever.warm_catalog(kb.collection, self.kbs.registry(kb.collection))
            except DocLensError as exc:
                log.warning("could not load knowledge base %r: %s", kb.name, exc)
                continue
            finally:
                with self._loading_lock:
                    self._loading.discard(kb.name)
            log.info("knowledge base %r ready (%d of %d, %.1f s)", kb.name, i, len(kbs), time.perf_counter() - started)
        if reindex.pending(self.settings.data_dir):
            self.migrate()

    def migrate(self, progress: Optional[ProgressCallback] = None) -> list[reindex.MigratedKB]:
        """Index the knowledge bases of a Milvus Lite 3.x data folder again from their PDFs."""
        return reindex.migrate(self.kbs, self.ingest, self.settings.data_dir, progress)

    def loading(self, kb_names: Sequence[str]) -> list[str]:
        """Those of ``kb_names`` still loading after a start: a question to them waits (the UI says so)."""
        with self._loading_lock:
            return [name for name in kb_names if name in self._loading]

    def load_all_in_background(self) -> threading.Thread:
        """``load_all`` while the app starts: a question asked meanwhile loads its own knowledge base."""
        thread = threading.Thread(target=self.load_all, name="doclens-load-kbs", daemon=True)
        thread.start()
        return thread

    def recover(self) -> None:
        """Finish or undo what a crash left half-done (moves into and out of the trash, documents still
        pending), then purge what outlived the trash's retention."""
        self.trash.recover()
        self.kbs.recover()
        self.trash.purge_expired()

    # -- ingestion ----------------------------------------------------------------------------

    def ingest(
        self,
        kb_name: str,
        paths: Sequence[Path],
        progress: Optional[ProgressCallback] = None,
        cancel: Optional[threading.Event] = None,
        display_names: Optional[Sequence[str]] = None,
        on_result: Optional[Callable[[int, IngestResult], None]] = None,
        cancel_files: Collection[int] = (),
        who: str = LOCAL,
    ) -> list[IngestResult]:
        """Add PDFs (files, or folders searched recursively) to a knowledge base, one result per file.

        ``display_names`` (same length as ``paths``) names uploaded temp files as the user's file names.
        Setting ``cancel`` stops between pages; the current document is rolled back (status "cancelled")
        and the files not yet started are reported as cancelled too. A failed file never stops the others.
        ``cancel_files``: places (0-based) of files cancelled alone meanwhile; ``on_result(place, result)``.
        """
        from backend.ingestion.ingestor import Ingestor
        from backend.ingestion.uploads import collect_uploads

        self.roles.require(who, kb_name, Role.EDITOR)
        kb = self.open_kb(kb_name)
        items = collect_uploads(paths, display_names)
        if not items:
            raise DocLensError("no PDF files found in " + ", ".join(str(p) for p in paths))
        with self._ingest_lock, self.kbs.writing(kb):  # one upload at a time per server and per knowledge base
            try:
                return Ingestor(self.settings, self.embedder, lambda: self.llm).run(
                    kb, items, progress, cancel, on_result, cancel_files
                )
            finally:  # fresh rows go into indexed segments now, not on the next restart
                self.kbs.seal(kb)

    # -- a folder kept in sync -----------------------------------------------------------------

    def sync(
        self,
        kb_name: str,
        folder: Path,
        dry_run: bool = False,
        progress: Optional[ProgressCallback] = None,
        on_action: Optional[Callable[[SyncAction], None]] = None,
        hashes: Optional[HashCache] = None,
        leave_out: Optional[set[tuple[str, str]]] = None,
        who: str = LOCAL,
    ) -> SyncPlan:
        """Make the knowledge base hold exactly the folder's PDFs (``backend/ingestion/sync_plan.py``): new
        files added, changed ones replaced, renamed ones renamed (not embedded again), missing ones moved
        to the trash. ``on_action`` is told each action once done (or failed); ``dry_run`` only plans."""
        from backend.ingestion.ingestor import Ingestor
        from backend.ingestion.sync import sync_folder

        kb = self.open_kb(kb_name)

        def ingest(items, on_result):
            return Ingestor(self.settings, self.embedder, lambda: self.llm).run(
                kb, items, progress, on_result=on_result
            )

        locks = (self._ingest_lock, self.kbs.writing(kb))  # as an upload holds them
        seal, remove = (lambda: self.kbs.seal(kb)), (lambda doc: self.trash.trash_document(kb, doc, who))
        return sync_folder(kb, Path(folder), ingest, locks, seal, dry_run, hashes, leave_out, on_action, remove)

    def watch_folder(
        self,
        kb_name: str,
        folder: Path,
        stop: threading.Event,
        on_plan: Callable[[SyncPlan], None],
        progress: Optional[ProgressCallback] = None,
        on_action: Optional[Callable[[SyncAction], None]] = None,
        on_error: Optional[Callable[[str], None]] = None,
        who: str = LOCAL,
    ) -> None:
        """``sync`` every ``sync.poll_seconds`` until ``stop`` is set; a file that failed is tried again
        once it changes. ``on_plan`` gets each look's plan, done."""
        from backend.ingestion.sync import failed_files, watch
        from backend.ingestion.sync_plan import HashCache

        hashes, failed = HashCache(), set[tuple[str, str]]()

        def once() -> SyncPlan:
            plan = self.sync(
                kb_name, folder, progress=progress, on_action=on_action, hashes=hashes, leave_out=failed, who=who
            )
            failed.update(failed_files(plan))
            on_plan(plan)
            return plan

        watch(Path(folder), once, self.settings.sync.poll_seconds, stop, on_error or log.warning)

    # -- questions ----------------------------------------------------------------------------

    def search(
        self,
        kb_name: str | Sequence[str],
        question: str,
        doc: str | Sequence[str] | None = None,
        mode: str = "rerank",
        top: Optional[int] = None,
        exclude: Sequence[str] = (),
        who: str = LOCAL,
    ) -> SearchResult:
        """Ranked sources (no LLM) of one knowledge base or several, one ranking. ``doc``: file name(s) to
        search only those; ``exclude``: file names to leave out (the evaluation's unanswerable questions)."""
        kbs = [self.open_kb(name) for name in self.readable(kb_name, who)]
        with self.kbs.deletion_explained(*kbs):
            return self.retriever.search(kbs, question, name_list(doc), mode, top, exclude)

    def ask_stream(
        self,
        kb_name: str | Sequence[str],
        question: str,
        history: Optional[list[dict[str, str]]] = None,
        doc: str | Sequence[str] | None = None,
        figure_id: Optional[str] = None,
        llm_profile: Optional[LLMSettings] = None,
        who: str = LOCAL,
    ) -> Iterator[AnswerUpdate]:
        """Stream an answer: an ``AnswerUpdate`` per text delta as it arrives, then the last one, ``done``,
        with the final ``Answer``. ``kb_name``, ``doc``: as for ``search``.

        ``history``: earlier turns as [{"role": "user"|"assistant", "content": str}], used to make the
        question standalone. ``figure_id``: ask about that figure with the vision model (one question).
        Model failures never raise: they end in an extractive answer with ``notice`` saying why.
        ``llm_profile``: this caller's own model (see ``llm_for``); None: the server's.
        """
        from backend.answering.answers import answer_updates, whole_answer_updates
        from backend.answering.formula_images import kept_in
        from backend.answering.prompts import condense_question, said_by_user

        kbs = [self.open_kb(name) for name in self.readable(kb_name, who)]
        llm = self.llm_for(llm_profile)
        if figure_id:
            yield from whole_answer_updates(self._figure_answer(kbs, llm, question, figure_id))
            return
        standalone = condense_question(llm, history, question) if history else question
        top = max(self.settings.retrieval.top_k, self.settings.llm.context_sources)
        with self.kbs.deletion_explained(*kbs):
            said = said_by_user(history, question)
            result = self.retriever.search_follow_up(kbs, question, standalone, said, name_list(doc), top)
        formulas = kept_in(kbs) if self.settings.ingest.read_formulas else None  # drawn ones read when cited
        abstain_below = self.settings.confidence.abstain_below
        yield from answer_updates(llm, question, result, history, standalone, abstain_below, formulas)

    def _figure_answer(self, kbs: list[OpenKB], llm: LLMClient, question: str, figure_id: str) -> Answer:
        """The vision model's answer about one figure (of the first of ``kbs`` with it), its page and passages."""
        from backend.answering.figures import answer_about_figure, figure_context
        from backend.retrieval.across import figure_of

        kb, figure = figure_of(kbs, figure_id)
        with self.kbs.deletion_explained(kb):
            result = self.retriever.search(kb, question, [figure.file], top=self.settings.llm.context_sources)
        context = figure_context(figure, kb.registry.page_text(figure.doc_id, figure.page), kb.text(figure.doc_id))
        image = kb.figure_image(figure)
        return answer_about_figure(llm, question, figure, image, None, context, result.sources, result.confidence)

    def ask(
        self,
        kb_name: str | Sequence[str],
        question: str,
        history: Optional[list[dict[str, str]]] = None,
        doc: str | Sequence[str] | None = None,
        figure_id: Optional[str] = None,
        llm_profile: Optional[LLMSettings] = None,
        who: str = LOCAL,
    ) -> Answer:
        answer = None
        for update in self.ask_stream(
            kb_name, question, history=history, doc=doc, figure_id=figure_id, llm_profile=llm_profile, who=who
        ):
            answer = update.answer or answer
        assert answer is not None
        return answer

    def summary(self, kb_name: str, file: str, refresh: bool = False, who: str = LOCAL) -> str:
        """A document's Markdown summary (LaTeX kept), generated once and cached; without a model (or when
        it fails) its first passages, not saved."""
        from backend.answering.summaries import fallback_summary, summarize_document

        self.roles.require(who, kb_name, Role.READER)
        kb = self.open_kb(kb_name, check_model=False)
        doc = kb.find_document(file)
        cached = None if refresh else kb.registry.summary(doc.doc_id)
        if cached:
            return cached
        try:
            summary = summarize_document(self.llm, doc.file, [t for _, t in kb.registry.document_text(doc.doc_id)])
        except LLMError as exc:
            reason = "" if not self.settings.llm_configured else f"The model failed ({exc})"
            return fallback_summary(doc.file, kb.first_passages(doc.doc_id, 3), reason=reason)
        kb.registry.save_summary(doc.doc_id, summary)
        return summary

    def page_image(self, kb_name: str, file: str, page: int, highlight: str = "", who: str = LOCAL) -> Path:
        """A PNG of one page with the given chunk text framed, rendered into the KB's folder (cached)."""
        from backend.documents.preview import ocr_line_reader, render_page

        self.roles.require(who, kb_name, Role.READER)
        kb = self.open_kb(kb_name, check_model=False)
        doc, pdf = kb.kept_original(file)
        return render_page(pdf, page, highlight, kb.preview_dir(doc.doc_id), ocr_line_reader(self.settings))

    # -- what the quality checks ask (backend.quality calls the facade, never the store) ----------

    def indexed_chunks(self, kb_name: str, who: str = LOCAL) -> list[ChunkRow]:
        """The stored chunks of the knowledge base's complete documents (what the self-test asks back)."""
        self.roles.require(who, kb_name, Role.READER)
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
