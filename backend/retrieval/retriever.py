"""The retriever: a question over a knowledge base -> ranked sources and a confidence, without a model.

Its stages each take one input and give one output, so each can be tested or swapped alone::

    question -> Query (scope, plan, vectors)      retriever._query
             -> Candidates                        candidates.CandidateSearch.find
             -> Fused                             fusion.fuse
             -> list[Source] in the mode's order  rerank.ordering.rank
             -> confidence                        confidence.confidence

It owns what its stages share across questions: the catalog of each knowledge base's document names
(the scope of a question that names one), the bilingual term list, the hubness references and the
model's translations of questions.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from backend.errors import DocLensError
from backend.retrieval import hubness
from backend.retrieval.candidates import CandidateSearch, Query
from backend.retrieval.confidence import confidence
from backend.retrieval.fusion import fuse, fuse_results
from backend.retrieval.query_plan import plan
from backend.retrieval.rerank.ordering import rank
from backend.retrieval.scope import Catalogs, Scope, narrowed, search_scope, shared_scope
from backend.retrieval.term_list import term_list
from backend.settings import Settings
from backend.store.base import SearchFilter, VectorStore
from backend.types import SEARCH_MODES, SearchResult

if TYPE_CHECKING:
    from backend.embedding.base import Embedder  # the embedding package is a heavy import
    from backend.knowledge_bases.open_kb import OpenKB
    from backend.knowledge_bases.registry import Registry

log = logging.getLogger(__name__)

MODES = SEARCH_MODES  # the one list lives in backend.types
Translator = Callable[[str], Optional[str]]
MAX_TRANSLATIONS = 2048  # questions whose translation is kept


class Retriever:
    """``embedder``: gives the embedder when a stage needs it (loading it may take a while: the retriever
    and its catalogs are ready before the model is)."""

    def __init__(
        self,
        settings: Settings,
        store: VectorStore,
        embedder: Callable[[], Embedder],
        translator: Optional[Translator] = None,
        catalogs: Optional[Catalogs] = None,
    ):
        self.settings = settings
        self.store = store
        self._embedder = embedder
        self.translator = translator
        self.catalogs = catalogs or Catalogs()  # what each document can be called, for questions that name one
        self.hubs = hubness.HubScores(embedder)
        self.candidates = CandidateSearch(settings, store, self.hubs)
        self._translations: dict[str, Optional[str]] = {}
        self._lock = threading.Lock()

    # -- what a first question would otherwise prepare ------------------------------------------

    def warm_term_list(self) -> None:
        term_list(self.settings.model_cache_dir)

    def warm_catalog(self, collection: str, registry: Registry) -> None:
        self.catalogs.get(collection, registry)  # 1-2 s at 1,500 documents

    def warm_up(self) -> None:
        """The embedder's kernels for a question's shape (0.6 s on OpenVINO)."""
        self._embedder().warm_up()

    def prepare_references(self) -> None:
        """The hubness references of both languages (about 1 s), embedded once."""
        for lang in ("zh", "en"):
            self.hubs.references(lang)

    # -- searching ------------------------------------------------------------------------------

    def search(
        self,
        kb: OpenKB,
        question: str,
        doc: Optional[str] = None,
        mode: str = "rerank",
        top: Optional[int] = None,
        exclude: Sequence[str] = (),
        said: Optional[str] = None,
    ) -> SearchResult:
        """Ranked sources. ``doc``: a file name to search only that document; ``exclude``: file names to
        leave out; ``said``: see ``scope.search_scope``."""
        _check(kb, question, mode)
        where, scope = search_scope(kb, self.catalogs, question, doc, exclude, said)
        return self._search(kb.collection, question.strip(), where, mode, top, scope)

    def search_follow_up(
        self, kb: OpenKB, question: str, rewrite: str, said: str, doc: Optional[str], top: int
    ) -> SearchResult:
        """The question's sources, fused with those of the model's standalone rewrite of it (a follow-up).
        Both look in the same documents (``scope.shared_scope``)."""
        if rewrite.strip() == question.strip():
            return self.search(kb, question, doc, top=top)
        _check(kb, question, "rerank")
        where, scope = search_scope(kb, self.catalogs, question, doc, (), None)
        _, rewrite_scope = search_scope(kb, self.catalogs, rewrite, doc, (), said)
        catalog = self.catalogs.get(kb.collection, kb.registry, where.exclude_doc_ids or ())
        scope, rewrite_scope = shared_scope((question, scope), (rewrite, rewrite_scope), catalog)
        result = self._search(kb.collection, question.strip(), where, "rerank", top, scope)
        # The rewrite helps follow-ups ("and its energy?") but must not take over: a model that
        # rewrites badly would otherwise decide alone what is found. The user's words weigh more.
        rewritten = self._search(kb.collection, rewrite.strip(), where, "rerank", top, rewrite_scope)
        return fuse_results(result, rewritten, top)

    def _search(
        self, collection: str, asked: str, where: SearchFilter, mode: str, top: Optional[int], scope: Optional[Scope]
    ) -> SearchResult:
        started = time.perf_counter()
        query = self._query(collection, asked, where, mode, scope)
        ranked = rank(fuse(self.candidates.find(query), self.settings.retrieval), self.settings)
        result = SearchResult(
            question=asked,
            mode=mode,
            confidence=confidence(ranked),
            sources=ranked[: top or self.settings.retrieval.top_k],
            queries=query.queries,
            searched_in=scope.label() if scope else "",
        )
        result.latency_ms = (time.perf_counter() - started) * 1000
        return result

    def _query(self, collection: str, asked: str, where: SearchFilter, mode: str, scope: Optional[Scope]) -> Query:
        """``scope``: the document(s) the question names: searched alone, for the rest of the question."""
        question = scope.rest if scope and scope.rest else asked
        queries = self._queries(question)
        vectors = self._embedder().embed_queries(queries)
        return Query(
            collection, asked, question, queries, plan(question, queries), vectors, narrowed(where, scope), mode, scope
        )

    # -- the model's translation of a question ----------------------------------------------------

    def _queries(self, question: str) -> list[str]:
        queries = [question]
        if self.settings.retrieval.query_expansion and self.translator is not None:
            translated = self._translate(question)
            if translated and translated.strip() and translated.strip() != question.strip():
                queries.append(translated.strip())
        return queries

    def _translate(self, question: str) -> Optional[str]:
        with self._lock:
            if question in self._translations:
                return self._translations[question]
        try:
            translated = self.translator(question) if self.translator else None
        except Exception as exc:  # expansion is a bonus: a failing model must not fail the search
            log.warning("query translation failed: %s", exc)
            translated = None
        with self._lock:
            if len(self._translations) > MAX_TRANSLATIONS:
                self._translations.clear()
            self._translations[question] = translated
        return translated


def _check(kb: OpenKB, question: str, mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"unknown search mode {mode!r}; use one of {', '.join(MODES)}")
    if not question or not question.strip():
        raise DocLensError("the question is empty")
    if kb.registry.totals()[0] == 0:
        raise DocLensError(f"knowledge base '{kb.name}' has no documents yet: upload PDFs first")
