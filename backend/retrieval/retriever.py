"""The retriever: a question over a knowledge base -> ranked sources and a confidence, without a model.

Its stages each take one input and give one output, so each can be tested or swapped alone::

    question -> Query (scope, plan, vectors)      retriever._query, one per knowledge base asked
             -> Candidates                        candidates.CandidateSearch.find (several: across.merged)
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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Optional, Sequence

import numpy as np

from backend.cpu import question_on_cpu
from backend.errors import DocLensError
from backend.retrieval import hubness
from backend.retrieval.across import held, merged, picked_documents, share, short_of_dense, short_of_keywords
from backend.retrieval.candidates import Candidates, CandidateSearch, Query
from backend.retrieval.confidence import confidence
from backend.retrieval.fusion import fuse, fuse_results
from backend.retrieval.languages import LibraryLanguages
from backend.retrieval.query_plan import plan
from backend.retrieval.rerank.ordering import rank
from backend.retrieval.scope import Catalogs, Scope, named_file, narrowed, search_scope, shared_scope
from backend.retrieval.term_list import term_list
from backend.settings import Settings
from backend.store.base import SearchFilter, VectorStore
from backend.text import text_language
from backend.types import SEARCH_MODES, SearchResult

if TYPE_CHECKING:
    from backend.embedding.base import Embedder  # the embedding package is a heavy import
    from backend.knowledge_bases.open_kb import OpenKB
    from backend.knowledge_bases.registry import Registry

log = logging.getLogger(__name__)

MISSING_DOCUMENT_CONFIDENCE = 2.0  # percent, at most, when the question names a PDF that is not searched

MODES = SEARCH_MODES  # the one list lives in backend.types
Translator = Callable[[str], Optional[str]]
MAX_TRANSLATIONS = 2048  # questions whose translation is kept
DENSE_SPREAD = 5  # see across.share: 15 of 30 from each of 10 (bench-search --kbs: fastest of 2, 3, 4, 5, 10)
MAX_PARALLEL_KBS = 8  # knowledge bases of one question searched at a time
# One pool for the process (a retriever is made again on each settings change); threads start on first use.
_KB_SEARCHES = ThreadPoolExecutor(MAX_PARALLEL_KBS, thread_name_prefix="doclens-kb-search")


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
        self.languages = LibraryLanguages(store)  # a question is translated only where that can find more
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
        kbs: OpenKB | Sequence[OpenKB],
        question: str,
        docs: Sequence[str] = (),
        mode: str = "rerank",
        top: Optional[int] = None,
        exclude: Sequence[str] = (),
        said: Optional[str] = None,
    ) -> SearchResult:
        """Ranked sources from one knowledge base or several (one ranking over them all). ``docs``: file
        names to search only those documents (``across.picked_documents``); ``exclude``: file names to
        leave out; ``said``: see ``scope.search_scope``."""
        library = _library(kbs)
        _check(library, question, mode)
        parts = _named_first(self._parts(library, question, docs, exclude, said))
        return self._missing_noted(self._search(parts, question.strip(), mode, top), question, parts)

    def _missing_noted(self, result: SearchResult, question: str, parts: Sequence[Part]) -> SearchResult:
        """A question that names a PDF none of the searched documents answers to asks about one not there."""
        named = "" if any(part.scope is not None for part in parts) else named_file(question)
        if named and not any(self._holds(part, named) for part in parts):
            # what it asks about is in that document, which is not searched: whatever was found is no answer
            result.missing_document, result.confidence = named, min(result.confidence, MISSING_DOCUMENT_CONFIDENCE)
        return result

    def _holds(self, part: Part, file: str) -> bool:
        """Whether a document searched in ``part`` has that file name (a name too short to be found as one)."""
        catalog = self.catalogs.get(part.kb.collection, part.kb.registry, part.where.exclude_doc_ids or ())
        wanted = file.casefold()
        return any(entry.file.casefold() == wanted for entry in catalog)

    def search_follow_up(
        self, kbs: OpenKB | Sequence[OpenKB], question: str, rewrite: str, said: str, docs: Sequence[str], top: int
    ) -> SearchResult:
        """The question's sources, fused with those of the model's standalone rewrite of it (a follow-up).
        Both look in the same documents (``scope.shared_scope``)."""
        if rewrite.strip() == question.strip():
            return self.search(kbs, question, docs, top=top)
        library = _library(kbs)
        _check(library, question, "rerank")
        pairs = []
        for part, rewrite_part in zip(
            self._parts(library, question, docs, (), None), self._parts(library, rewrite, docs, (), said)
        ):
            catalog = self.catalogs.get(part.kb.collection, part.kb.registry, part.where.exclude_doc_ids or ())
            scope, rewrite_scope = shared_scope((question, part.scope), (rewrite, rewrite_part.scope), catalog)
            pairs.append((replace(part, scope=scope), replace(part, scope=rewrite_scope)))
        kept = _named_first([part for part, _ in pairs])
        result = self._search(kept, question.strip(), "rerank", top)
        # The rewrite helps follow-ups ("and its energy?") but must not take over: a model that
        # rewrites badly would otherwise decide alone what is found. The user's words weigh more.
        rewritten = self._search([r for p, r in pairs if any(p is k for k in kept)], rewrite.strip(), "rerank", top)
        return self._missing_noted(fuse_results(result, rewritten, top), question, kept)

    def _parts(
        self, library: list[OpenKB], question: str, docs: Sequence[str], exclude: Sequence[str], said: Optional[str]
    ) -> list[Part]:
        """Where each knowledge base is searched; with documents picked, only those that hold one."""
        picked = picked_documents(library, docs)
        parts = []
        for kb in library:
            if docs and kb.collection not in picked:
                continue
            chosen = picked.get(kb.collection, [])
            where, scope = search_scope(kb, self.catalogs, question, chosen, held(kb, exclude), said)
            parts.append(Part(kb, where, scope))
        return parts

    def _search(self, parts: list[Part], asked: str, mode: str, top: Optional[int]) -> SearchResult:
        started = time.perf_counter()
        vectors: dict[tuple[str, ...], np.ndarray] = {}  # one embedding per wording, not per knowledge base
        queries = [self._query(part, asked, mode, vectors) for part in parts]
        with question_on_cpu():
            return self._ranked(parts, queries, asked, mode, top, started)

    def _ranked(
        self, parts: list[Part], queries: list[Query], asked: str, mode: str, top: Optional[int], started: float
    ) -> SearchResult:
        found = self._found(queries)
        for part, candidates in zip(parts, found):
            for source in candidates.sources.values():
                source.kb = part.kb.name
        union = found[0] if len(found) == 1 else merged(found, self.settings.retrieval)
        ranked = rank(fuse(union, self.settings.retrieval), self.settings)
        result = SearchResult(
            question=asked,
            mode=mode,
            confidence=confidence(ranked),
            sources=ranked[: top or self.settings.retrieval.top_k],
            queries=union.query.queries,
            searched_in=_searched_in(parts),
        )
        result.latency_ms = (time.perf_counter() - started) * 1000
        return result

    def _found(self, queries: list[Query]) -> list[Candidates]:
        """Each knowledge base's candidates. Across several, each first gives its share of the hits
        (``across.share``), and those that may hold more of the merged lists' best give them all; the
        searches run side by side (a server overlaps them; Milvus Lite answers one at a time)."""
        if len(queries) == 1:
            return [self.candidates.find(queries[0])]
        cfg = self.settings.retrieval
        dense = share(cfg.dense_top_n, len(queries), DENSE_SPREAD)
        keyword = share(cfg.keyword_top_n, len(queries))
        first = [replace(q, dense_limit=dense, keyword_limit=keyword) for q in queries]
        found = list(_KB_SEARCHES.map(self.candidates.find, first))
        again = sorted(
            set(short_of_dense(found, dense, cfg.dense_top_n) if dense < cfg.dense_top_n else [])
            | set(short_of_keywords(found, keyword, cfg.keyword_top_n) if keyword < cfg.keyword_top_n else [])
        )
        for k, candidates in zip(again, _KB_SEARCHES.map(self.candidates.find, [queries[k] for k in again])):
            found[k] = candidates
        return found

    def _query(self, part: Part, asked: str, mode: str, vectors: dict[tuple[str, ...], np.ndarray]) -> Query:
        """``part.scope``: the document(s) the question names: searched alone, for the rest of the question."""
        scope = part.scope
        question = scope.rest if scope and scope.rest else asked
        queries = self._queries(question, part.kb)
        if tuple(queries) not in vectors:
            with question_on_cpu():
                vectors[tuple(queries)] = self._embedder().embed_queries(queries)
        return Query(
            part.kb.collection,
            asked,
            question,
            queries,
            plan(question, queries),
            vectors[tuple(queries)],
            narrowed(part.where, scope),
            mode,
            scope,
        )

    # -- the model's translation of a question ----------------------------------------------------

    def _queries(self, question: str, kb: OpenKB) -> list[str]:
        queries = [question]
        if (
            self.settings.retrieval.query_expansion
            and self.translator is not None
            and self.languages.worth_translating(kb, text_language(question))
        ):
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


@dataclass(frozen=True)
class Part:
    """One knowledge base of a question: where it is searched and the document(s) the question names there."""

    kb: OpenKB
    where: SearchFilter
    scope: Optional[Scope]


def _library(kbs: OpenKB | Sequence[OpenKB]) -> list[OpenKB]:
    library = [kbs] if not isinstance(kbs, Sequence) else list(kbs)
    if not library:
        raise DocLensError("no knowledge base chosen: choose one or more")
    return library


def _named_first(parts: list[Part]) -> list[Part]:
    """A question that names a document (not one the user chose) searches only the knowledge bases
    holding it, as it searches only that document."""
    named = [part for part in parts if part.scope is not None and part.scope.reason != "chosen"]
    return named or parts


def _searched_in(parts: list[Part]) -> str:
    if len(parts) == 1:
        return parts[0].scope.label() if parts[0].scope else ""
    return "; ".join(f"{part.kb.name}: {part.scope.label()}" for part in parts if part.scope)


def _check(library: list[OpenKB], question: str, mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"unknown search mode {mode!r}; use one of {', '.join(MODES)}")
    if not question or not question.strip():
        raise DocLensError("the question is empty")
    if all(kb.registry.totals()[0] == 0 for kb in library):
        if len(library) == 1:
            raise DocLensError(f"knowledge base '{library[0].name}' has no documents yet: upload PDFs first")
        names = ", ".join(f"'{kb.name}'" for kb in library)
        raise DocLensError(f"the knowledge bases {names} have no documents yet: upload PDFs first")
