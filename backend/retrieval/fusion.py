"""Stage 2 of a search: the candidates' ranked lists -> one order, by weighted Reciprocal Rank Fusion:
score(d) = sum_i w_i / (k + rank_i(d)), ranks 1-based. Also the fusion of two searches' results (the
user's question and the model's rewrite of a follow-up)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Optional, Sequence

from backend.retrieval.candidates import Candidates, Query
from backend.settings import RetrievalSettings
from backend.types import SearchResult, Source


@dataclass
class RankedList:
    ids: Sequence[str]  # best first
    weight: float
    item_weights: Optional[Mapping[str, float]] = None  # a factor per id (absent: 1.0)


def weighted_rrf(lists: Sequence[RankedList], k: float = 60.0) -> dict[str, float]:
    """Fused scores of every id that appears in any list; an id missing from a list gets nothing from it."""
    scores: dict[str, float] = {}
    for ranked in lists:
        if ranked.weight <= 0:
            continue
        seen = set()
        for rank, item in enumerate(ranked.ids, 1):
            if item in seen:  # a list may repeat an id (several queries): only its best rank counts
                continue
            seen.add(item)
            factor = ranked.item_weights.get(item, 1.0) if ranked.item_weights is not None else 1.0
            if factor > 0:
                scores[item] = scores.get(item, 0.0) + factor * ranked.weight / (k + rank)
    return scores


def order_by_score(scores: dict[str, float]) -> list[str]:
    """Ids by descending score; ties keep first-seen order (dicts keep insertion order)."""
    return sorted(scores, key=lambda item: -scores[item])


@dataclass
class Fused:
    """The candidates in one order: the named pages' chunks first, then by fused score (each ``rrf`` set)."""

    query: Query
    ordered: list[Source]
    lists: int  # ranked lists fused: the scale of the fused score


def fuse(candidates: Candidates, settings: RetrievalSettings) -> Fused:
    """Weighted RRF over every dense and keyword list; each candidate keeps its fused score."""
    query = candidates.query
    fused = weighted_rrf(
        [RankedList([h.row.id for h in hits], settings.dense_weight) for hits in candidates.dense_lists]
        + [
            RankedList([h.row.id for h in run.hits], settings.keyword_weight, run.item_weights())
            for run in candidates.keyword_runs
        ],
        k=settings.rrf_k,
    )
    for chunk_id, score in fused.items():
        candidates.sources[chunk_id].rrf = score
    named_ids = {s.chunk_id for s in candidates.named_pages}
    ordered = candidates.named_pages + [candidates.sources[i] for i in order_by_score(fused) if i not in named_ids]
    lists = len(candidates.dense_lists) + len(query.queries) * (query.mode != "dense")
    return Fused(query, ordered, lists)


ORIGINAL_WEIGHT = 1.0
# A rewrite can help a follow-up question, but the user's own words lead: with k = 1 the rewrite's first
# source counts like the user's third (with k = 60 ranks barely differ and a rewrite overturned the top).
REWRITE_WEIGHT = 0.5
REWRITE_RRF_K = 1.0


def fuse_results(original: SearchResult, rewritten: SearchResult, top: int) -> SearchResult:
    """One ranking from the searches of the user's question and of the model's rewrite of it (RRF over
    chunk ids). Each source keeps its higher relevance; the confidence is the higher of the two."""
    ranked = weighted_rrf(
        [
            RankedList([s.chunk_id for s in original.sources], ORIGINAL_WEIGHT),
            RankedList([s.chunk_id for s in rewritten.sources], REWRITE_WEIGHT),
        ],
        k=REWRITE_RRF_K,
    )
    best: dict[str, Source] = {}
    for source in [*original.sources, *rewritten.sources]:
        kept = best.get(source.chunk_id)
        if kept is None or source.relevance > kept.relevance:
            best[source.chunk_id] = source
    sources = [best[chunk_id] for chunk_id in order_by_score(ranked)][:top]
    # Each list's first sources stay near the top of the fused one, so the answer is there whenever either
    # search was sure of its own: a vague follow-up ("and its energy?") must not lower the rewrite's.
    confidence = max(original.confidence, rewritten.confidence)
    return replace(original, sources=sources, confidence=confidence, queries=[*original.queries, *rewritten.queries])
