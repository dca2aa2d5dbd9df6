"""Question -> dense and keyword candidates -> weighted RRF -> composite rerank -> confidence."""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Callable, Optional

import numpy as np

from backend.retrieval import crosslingual, hubness
from backend.retrieval.confidence import confidence
from backend.retrieval.doc_scope import Scope, named_pages_first, narrowed
from backend.retrieval.fusion import RankedList, order_by_score, weighted_rrf
from backend.retrieval.rerank import rerank, semantic_score
from backend.settings import Settings
from backend.store.base import Hit, SearchFilter, VectorStore
from backend.text import question_language
from backend.types import SEARCH_MODES, SearchResult, Source

if TYPE_CHECKING:
    from backend.embedding.base import Embedder  # the embedding package is a heavy import

log = logging.getLogger(__name__)

MODES = SEARCH_MODES  # the one list lives in backend.types
Translator = Callable[[str], Optional[str]]


class Retriever:
    def __init__(
        self, settings: Settings, store: VectorStore, embedder: Embedder, translator: Optional[Translator] = None
    ):
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.translator = translator
        self._translations: dict[str, Optional[str]] = {}
        self._lock = threading.Lock()
        self.hubs = hubness.HubScores(embedder)

    def search(
        self,
        collection: str,
        question: str,
        where: SearchFilter,
        mode: str = "rerank",
        top: Optional[int] = None,
        scope: Optional[Scope] = None,
    ) -> SearchResult:
        """``scope``: the document(s) the question names (doc_scope): searched alone, for the rest of the
        question, with the pages it names first."""
        if mode not in MODES:
            raise ValueError(f"unknown search mode {mode!r}; use one of {', '.join(MODES)}")
        started = time.perf_counter()
        top = top or self.settings.retrieval.top_k
        asked, question, where = question, (scope.rest if scope and scope.rest else question), narrowed(where, scope)
        queries = self._queries(question)
        question_plan = crosslingual.plan(question, queries)
        vectors = self.embedder.embed_queries(queries)
        dense_lists, keyword_runs = self._hit_lists(collection, mode, queries, vectors, question_plan, where)
        needing = _needing_vectors(question_plan, dense_lists, keyword_runs)
        stored = self.store.vectors(collection, needing) if needing else {}
        corrections = self._hub_corrections(question_plan, stored)
        dense_lists = [_corrected(hits, corrections) for hits in dense_lists]
        candidates = _collect(dense_lists, keyword_runs)
        named_pages = self._named_page_sources(collection, scope, candidates)
        self._fill_similarity(collection, candidates, vectors, stored, corrections)
        fused = self._fuse(dense_lists, keyword_runs, candidates)
        named_ids = {s.chunk_id for s in named_pages}
        ordered = named_pages + [candidates[i] for i in order_by_score(fused) if i not in named_ids]
        lists = len(dense_lists) + len(queries) * (mode != "dense")
        ranked = named_pages_first(self._rank(mode, question_plan, ordered, lists), scope)
        sources = ranked[:top]
        result = SearchResult(
            question=asked,
            mode=mode,
            confidence=confidence(ranked),
            sources=sources,
            queries=queries,
            searched_in=scope.label() if scope else "",
        )
        result.latency_ms = (time.perf_counter() - started) * 1000
        return result

    def _hit_lists(
        self,
        collection: str,
        mode: str,
        queries: list[str],
        vectors,
        question_plan: crosslingual.QuestionPlan,
        where: SearchFilter,
    ) -> tuple[list[list[Hit]], list[crosslingual.KeywordRun]]:
        """The dense hits of each query vector and the keyword runs of each keyword query (those the mode uses)."""
        cfg = self.settings.retrieval
        dense_lists = (
            [self.store.dense_search(collection, v, cfg.dense_top_n, where) for v in vectors]
            if mode != "keyword"
            else []
        )
        keyword_runs = (
            [
                crosslingual.KeywordRun(
                    lang, self.store.keyword_search(collection, q, cfg.keyword_top_n, where), bridge
                )
                for q, lang, bridge in crosslingual.keyword_queries(question_plan, queries)
            ]
            if mode != "dense"
            else []
        )
        return dense_lists, keyword_runs

    def _fuse(
        self, dense_lists: list[list[Hit]], keyword_runs: list[crosslingual.KeywordRun], candidates: dict[str, Source]
    ) -> dict[str, float]:
        """Weighted RRF over every list; each candidate keeps its fused score."""
        cfg = self.settings.retrieval
        fused = weighted_rrf(
            [RankedList([h.row.id for h in hits], cfg.dense_weight) for hits in dense_lists]
            + [
                RankedList([h.row.id for h in run.hits], cfg.keyword_weight, run.item_weights()) for run in keyword_runs
            ],
            k=cfg.rrf_k,
        )
        for chunk_id, score in fused.items():
            candidates[chunk_id].rrf = score
        return fused

    def _rank(
        self, mode: str, question_plan: crosslingual.QuestionPlan, ordered: list[Source], lists: int
    ) -> list[Source]:
        """Order candidates for the mode; the reranker's signals are computed in every mode for display."""
        pool = ordered[: max(self.settings.retrieval.rerank_candidates, self.settings.retrieval.top_k)]
        reranked = rerank(question_plan.question, pool, self.settings.rerank, question_plan)
        if mode == "rerank":
            return reranked
        if mode == "dense":
            by_mode = sorted(pool, key=lambda s: -(s.similarity or 0.0))
            for s in by_mode:
                s.relevance = semantic_score(s.similarity)
            return by_mode
        if mode == "keyword":
            by_mode = sorted(pool, key=lambda s: s.keyword_rank or 10**9)
        else:  # hybrid: the fused order itself
            by_mode = list(pool)
        best_possible = (
            (self.settings.retrieval.dense_weight + self.settings.retrieval.keyword_weight)
            / (self.settings.retrieval.rrf_k + 1)
            * max(1, lists // 2)
        )
        for s in by_mode:
            s.relevance = min(100.0, 100.0 * s.rrf / best_possible) if best_possible else 0.0
        return by_mode

    def _named_page_sources(
        self, collection: str, scope: Optional[Scope], candidates: dict[str, Source]
    ) -> list[Source]:
        """Every chunk of the pages the question names (in the named documents), added to the candidates."""
        if scope is None or not scope.pages:
            return []
        named = []
        for doc_id in scope.doc_ids:
            for row in self.store.chunks(collection, doc_id=doc_id):
                if any(row.page <= p <= row.page_end for p in scope.pages):
                    named.append(candidates.setdefault(row.id, _source(Hit(row, 0.0))))
        return named

    def _hub_corrections(
        self, question_plan: crosslingual.QuestionPlan, stored: dict[str, np.ndarray]
    ) -> dict[str, float]:
        """What each candidate in the other language (scored without a translation) adds to its cosine."""
        weight = self.settings.retrieval.hub_correction
        if weight <= 0 or not stored:  # stored holds only other-language candidates: none without a language
            return {}
        ids = list(stored)
        hubs = self.hubs.of(question_plan.lang, np.stack([stored[i] for i in ids]))
        return hubness.corrections(dict(zip(ids, map(float, hubs))), weight)

    def _fill_similarity(
        self,
        collection: str,
        candidates: dict[str, Source],
        vectors: np.ndarray,
        stored: dict[str, np.ndarray],
        corrections: dict[str, float],
    ) -> None:
        """Keyword-only hits get the real cosine too, from their stored vectors (corrected like the dense hits)."""
        missing = [cid for cid, s in candidates.items() if s.similarity is None]
        unfetched = [cid for cid in missing if cid not in stored]
        stored = {**stored, **(self.store.vectors(collection, unfetched) if unfetched else {})}
        for cid in missing:
            if cid in stored:
                candidates[cid].similarity = float(np.max(vectors @ stored[cid])) + corrections.get(cid, 0.0)

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
            if len(self._translations) > 2048:
                self._translations.clear()
            self._translations[question] = translated
        return translated


def translation_prompt(question: str) -> list[dict[str, str]]:
    target = "English" if question_language(question) == "zh" else "Chinese (简体中文)"
    return [
        {
            "role": "system",
            "content": f"Translate the user's question into {target}. Reply with the "
            f"translation only, no quotes or explanations.",
        },
        {"role": "user", "content": question},
    ]


def _collect(dense_lists: list[list[Hit]], keyword_runs: list[crosslingual.KeywordRun]) -> dict[str, Source]:
    """One Source per chunk, with its best dense rank and similarity and its best keyword rank (from the
    keyword searches that count for the chunk's language)."""
    candidates: dict[str, Source] = {}
    for hits in dense_lists:
        for rank, hit in enumerate(hits, 1):
            source = candidates.setdefault(hit.row.id, _source(hit))
            source.dense_rank = min(rank, source.dense_rank or rank)
            source.similarity = max(hit.score, source.similarity if source.similarity is not None else -1.0)
    for run in keyword_runs:
        for rank, hit in enumerate(run.hits, 1):
            if run.factor(hit.row.lang) <= 0:
                continue
            source = candidates.setdefault(hit.row.id, _source(hit))
            source.keyword_rank = min(rank, source.keyword_rank or rank)
    return candidates


def _needing_vectors(
    question_plan: crosslingual.QuestionPlan,
    dense_lists: list[list[Hit]],
    keyword_runs: list[crosslingual.KeywordRun],
) -> list[str]:
    """The candidates in the other language that are scored without a translation: their hubness is
    measured (hubness.py), so their vectors are fetched, once."""
    hits = [hit for hits in dense_lists for hit in hits] + [hit for run in keyword_runs for hit in run.hits]
    return list(
        dict.fromkeys(
            hit.row.id
            for hit in hits
            if question_plan.crosses(hit.row.lang) and question_plan.question_for(hit.row.lang) is None
        )
    )


def _corrected(hits: list[Hit], corrections: dict[str, float]) -> list[Hit]:
    """A dense list with its hubs' cosines corrected, in its new order."""
    if not corrections:
        return hits
    scored = [Hit(hit.row, hit.score + corrections.get(hit.row.id, 0.0)) for hit in hits]
    return sorted(scored, key=lambda hit: -hit.score)


def _source(hit: Hit) -> Source:
    row = hit.row
    return Source(
        file=row.filename,
        doc_id=row.doc_id,
        page=row.page,
        page_end=row.page_end,
        chunk_index=row.chunk_index,
        text=row.content,
        chunk_id=row.id,
        lang=row.lang,
        kind=row.kind,
    )
