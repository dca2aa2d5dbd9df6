"""Stage 1 of a search: the question -> candidate passages from the dense and the keyword searches.

Each candidate carries its best dense rank and cosine, its best keyword rank and how close its BM25 score
comes to the keyword search's best (``bm25_lead``). Across languages the
cosine of a passage in the other language, scored without a translation, is corrected for hubness
(``backend.retrieval.hubness``), and keyword hits count only as far as their query reaches the passage's
language (``KeywordRun``). The pages a question names (``Scope.pages``) bring all their chunks along.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from backend.retrieval import hubness
from backend.retrieval.query_plan import KeywordRun, QuestionPlan, keyword_queries
from backend.retrieval.scope import Scope
from backend.settings import Settings
from backend.store.base import Hit, SearchFilter, VectorStore
from backend.types import Source


@dataclass
class Query:
    """One search as every stage sees it: where it looks, what it scores and how it was asked."""

    collection: str
    asked: str  # the user's question
    question: str  # what is scored: the question, or its rest when it names a document
    queries: list[str]  # the question and the model's translation of it
    plan: QuestionPlan
    vectors: np.ndarray  # one query vector per query
    where: SearchFilter
    mode: str
    scope: Optional[Scope] = None
    keyword_limit: int = 0  # hits asked of each keyword search (0: retrieval.keyword_top_n)
    dense_limit: int = 0  # hits asked of each dense search (0: retrieval.dense_top_n)


@dataclass
class Candidates:
    """What the searches found: their ranked lists, and one Source per chunk found by any of them."""

    query: Query
    dense_lists: list[list[Hit]]
    keyword_runs: list[KeywordRun]
    sources: dict[str, Source]
    named_pages: list[Source]  # every chunk of the pages the question names (also in ``sources``)


class CandidateSearch:
    """Runs the searches a query's mode asks for against the store."""

    def __init__(self, settings: Settings, store: VectorStore, hubs: hubness.HubScores) -> None:
        self.settings = settings
        self.store = store
        self.hubs = hubs

    def find(self, query: Query) -> Candidates:
        dense_lists, keyword_runs = self._hit_lists(query)
        stored = _hit_vectors(dense_lists, keyword_runs)
        needing = _needing_vectors(query.plan, dense_lists, keyword_runs)
        corrections = self._hub_corrections(query.plan, {cid: stored[cid] for cid in needing if cid in stored})
        dense_lists = [_corrected(hits, corrections) for hits in dense_lists]
        sources = collect_sources(dense_lists, keyword_runs)
        named_pages = self._named_page_sources(query, sources)
        self._fill_similarity(query, sources, stored, corrections)
        return Candidates(query, dense_lists, keyword_runs, sources, named_pages)

    def _hit_lists(self, query: Query) -> tuple[list[list[Hit]], list[KeywordRun]]:
        """The dense hits of each query vector and the keyword runs of each keyword query (those the mode
        uses): one request for all the vectors and one for all the keyword queries."""
        cfg = self.settings.retrieval
        dense_lists = (
            self.store.dense_searches(
                query.collection, list(query.vectors), query.dense_limit or cfg.dense_top_n, query.where
            )
            if query.mode != "keyword"
            else []
        )
        keyword_runs = []
        if query.mode != "dense":
            runs = keyword_queries(query.plan, query.queries)
            limit = query.keyword_limit or cfg.keyword_top_n
            found = self.store.keyword_searches(query.collection, [q for q, _, _ in runs], limit, query.where)
            keyword_runs = [KeywordRun(lang, hits, bridge, cfg) for (_, lang, bridge), hits in zip(runs, found)]
        return dense_lists, keyword_runs

    def _named_page_sources(self, query: Query, sources: dict[str, Source]) -> list[Source]:
        """Every chunk of the pages the question names (in the named documents), added to the candidates."""
        scope = query.scope
        if scope is None or not scope.pages:
            return []
        named = []
        for doc_id in scope.doc_ids:
            for row in self.store.chunks(query.collection, doc_id=doc_id):
                if any(row.page <= p <= row.page_end for p in scope.pages):
                    named.append(sources.setdefault(row.id, source_of(Hit(row, 0.0))))
        return named

    def _hub_corrections(self, question_plan: QuestionPlan, stored: dict[str, np.ndarray]) -> dict[str, float]:
        """What each candidate in the other language (scored without a translation) adds to its cosine."""
        weight = self.settings.retrieval.hub_correction
        if weight <= 0 or not stored:  # stored holds only other-language candidates: none without a language
            return {}
        ids = list(stored)
        hubs = self.hubs.of(question_plan.lang, np.stack([stored[i] for i in ids]))
        return hubness.corrections(dict(zip(ids, map(float, hubs))), weight)

    def _fill_similarity(
        self, query: Query, sources: dict[str, Source], stored: dict[str, np.ndarray], corrections: dict[str, float]
    ) -> None:
        """Keyword-only hits get the real cosine too, from their stored vectors (corrected like the dense hits)."""
        missing = [cid for cid, s in sources.items() if s.similarity is None]
        unfetched = [cid for cid in missing if cid not in stored]
        stored = {**stored, **(self.store.vectors(query.collection, unfetched) if unfetched else {})}
        for cid in missing:
            if cid in stored:
                sources[cid].similarity = float(np.max(query.vectors @ stored[cid])) + corrections.get(cid, 0.0)


def collect_sources(dense_lists: list[list[Hit]], keyword_runs: list[KeywordRun]) -> dict[str, Source]:
    """One Source per chunk, with its best dense rank and similarity and its best keyword rank (from the
    keyword searches that count for the chunk's language)."""
    candidates: dict[str, Source] = {}
    for hits in dense_lists:
        for rank, hit in enumerate(hits, 1):
            source = candidates.setdefault(hit.row.id, source_of(hit))
            source.dense_rank = min(rank, source.dense_rank or rank)
            source.similarity = max(hit.score, source.similarity if source.similarity is not None else -1.0)
    for run in keyword_runs:
        leader = max((hit.score for hit in run.hits), default=0.0)
        for rank, hit in enumerate(run.hits, 1):
            if run.factor(hit.row.lang) <= 0:
                continue
            source = candidates.setdefault(hit.row.id, source_of(hit))
            source.keyword_rank = min(rank, source.keyword_rank or rank)
            if leader > 0 and run.in_own_language(hit.row.lang):
                source.bm25_lead = max(source.bm25_lead, hit.score / leader)
    return candidates


def _needing_vectors(
    question_plan: QuestionPlan, dense_lists: list[list[Hit]], keyword_runs: list[KeywordRun]
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


def _hit_vectors(dense_lists: list[list[Hit]], keyword_runs: list[KeywordRun]) -> dict[str, np.ndarray]:
    """The stored vector of every hit, as the searches returned it with the hit."""
    hits = [hit for hits in dense_lists for hit in hits] + [hit for run in keyword_runs for hit in run.hits]
    return {hit.row.id: hit.row.vector for hit in hits if hit.row.vector is not None}


def _corrected(hits: list[Hit], corrections: dict[str, float]) -> list[Hit]:
    """A dense list with its hubs' cosines corrected, in its new order."""
    if not corrections:
        return hits
    scored = [Hit(hit.row, hit.score + corrections.get(hit.row.id, 0.0)) for hit in hits]
    return sorted(scored, key=lambda hit: -hit.score)


def source_of(hit: Hit) -> Source:
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
