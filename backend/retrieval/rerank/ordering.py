"""Stage 3 of a search: the fused candidates -> the ranking of the search's mode.

The composite reranker scores the head of the fused list in every mode (its signals are shown to the
user); ``rerank`` orders by its relevance, ``dense`` by the cosine, ``keyword`` by the BM25 rank and
``hybrid`` keeps the fused order. Chunks of the pages the question names come first in every mode.
"""

from __future__ import annotations

from backend.retrieval.fusion import Fused
from backend.retrieval.rerank.composite import rerank
from backend.retrieval.rerank.signals import semantic_score
from backend.retrieval.scope import named_pages_first
from backend.settings import Settings
from backend.types import Source


def rank(fused: Fused, settings: Settings) -> list[Source]:
    """Order candidates for the mode; the reranker's signals are computed in every mode for display."""
    cfg = settings.retrieval
    query = fused.query
    pool = fused.ordered[: max(cfg.rerank_candidates, cfg.top_k)]
    names_document = query.scope is not None and bool(query.scope.doc_ids) and not query.scope.pages
    reranked = rerank(query.plan.question, pool, settings.rerank, query.plan, settings.rerank_cross, names_document)
    if query.mode == "rerank":
        ranked = reranked
    elif query.mode == "dense":
        ranked = sorted(pool, key=lambda s: -(s.similarity or 0.0))
        for s in ranked:
            s.relevance = semantic_score(s.similarity)
    else:
        ranked = sorted(pool, key=lambda s: s.keyword_rank or 10**9) if query.mode == "keyword" else list(pool)
        _relevance_from_fusion(ranked, fused.lists, settings)
    return named_pages_first(ranked, query.scope)


def _relevance_from_fusion(ranked: list[Source], lists: int, settings: Settings) -> None:
    """keyword and hybrid show the fused score as a share of the best a chunk could get from the lists."""
    cfg = settings.retrieval
    best_possible = (cfg.dense_weight + cfg.keyword_weight) / (cfg.rrf_k + 1) * max(1, lists // 2)
    for s in ranked:
        s.relevance = min(100.0, 100.0 * s.rrf / best_possible) if best_possible else 0.0
