"""The composite rule-based reranker: seven signals of 0-100 each of the passage itself, a weighted mean as
its own relevance, then blended with its document's best passage (the ``document`` signal).

Every signal is kept on the source so the user sees why a passage ranks where it does.
"""

from __future__ import annotations

from typing import Optional, Sequence

from backend.retrieval.query_plan import QuestionPlan
from backend.retrieval.rerank.chunk_kinds import kind_factor
from backend.retrieval.rerank.crosslingual import cross_relevance, cross_signals
from backend.retrieval.rerank.signals import (
    bm25_score,
    candidate_idf,
    entity_score,
    fuzzy_score,
    keyword_score,
    length_score,
    rank_score,
    semantic_score,
)
from backend.settings import CrossRerankSettings, RerankSettings
from backend.types import Source

SIGNALS = ("fuzzy", "keyword", "semantic", "length", "rank", "entity", "bm25")
# The best own relevance among the candidates of the passage's document: a question is mostly about one
# document, so the passages beside its best match outrank a lone look-alike from another document.
DOCUMENT = "document"


def rerank(
    question: str,
    candidates: Sequence[Source],
    weights: RerankSettings,
    question_plan: Optional[QuestionPlan] = None,
    cross: Optional[CrossRerankSettings] = None,
    names_document: bool = False,
) -> list[Source]:
    """Score candidates (already in fused order) and return them by descending relevance. With a
    ``question_plan``, a candidate in another language is scored against the model's translation of the
    question, or without one by the cross-lingual signals. ``names_document``: the question names the
    document it is about (and no page), so the bm25 signal weighs ``bm25_named_document``."""
    cross = cross or CrossRerankSettings()
    if names_document:
        weights = weights.model_copy(update={"bm25": weights.bm25_named_document})
    idfs: dict[str, dict[str, float]] = {}
    for rank, source in enumerate(candidates, 1):
        asked = question_plan.question_for(source.lang) if question_plan else question
        if asked is None:
            assert question_plan is not None  # only a plan leaves a passage without a question
            source.scores = {
                **cross_signals(question_plan, source.text, source.similarity, cross),
                "length": length_score(source.text),
                "rank": rank_score(rank, len(candidates)),
                "bm25": bm25_score(source.bm25_lead),
            }
            source.scores = {s: source.scores[s] for s in SIGNALS}
            source.relevance, source.bridged = cross_relevance(source.scores, cross), True
            source.relevance = _of_its_kind(source, question, weights)
            continue
        if asked not in idfs:
            idfs[asked] = candidate_idf(asked, [c.text for c in candidates])
        source.scores = {
            "fuzzy": fuzzy_score(asked, source.text),
            "keyword": keyword_score(asked, source.text, idfs[asked]),
            "semantic": semantic_score(source.similarity),
            "length": length_score(source.text),
            "rank": rank_score(rank, len(candidates)),
            "entity": entity_score(asked, source.text),
            "bm25": bm25_score(source.bm25_lead),
        }
        source.relevance = own_relevance(source.scores, weights, has_bm25=source.bm25_lead > 0)
        source.relevance = _of_its_kind(source, question, weights)
    with_document(candidates, weights.document)
    return sorted(candidates, key=lambda s: -s.relevance)


def _of_its_kind(source: Source, question: str, weights: RerankSettings) -> float:
    """The relevance weighed by the chunk's kind (chunk_kinds), still a percentage."""
    return min(
        100.0, source.relevance * kind_factor(question, source.kind, weights.references, weights.references_asked)
    )


def own_relevance(scores: dict[str, float], weights: RerankSettings, has_bm25: bool = True) -> float:
    """The weighted mean of the signals. A passage the keyword search did not return has no BM25 score to
    compare with the leader's: the bm25 signal abstains there instead of counting as 0, which pushed the
    paraphrased passages only the dense search finds below every keyword hit (dev-en lost 0.01 mrr)."""
    counted = [s for s in SIGNALS if has_bm25 or s != "bm25"]
    total = sum(getattr(weights, s) for s in counted) or 1.0
    return sum(getattr(weights, s) * scores[s] for s in counted) / total


def with_document(candidates: Sequence[Source], share: float) -> None:
    """Each candidate's relevance blended with the best relevance among its document's candidates, which
    counts ``share`` against the passage's own 1.0 (the best passage of a document keeps its own score)."""
    best: dict[str, float] = {}
    for source in candidates:
        best[source.doc_id] = max(best.get(source.doc_id, 0.0), source.relevance)
    for source in candidates:
        source.scores[DOCUMENT] = best[source.doc_id]
        source.relevance = (source.relevance + share * best[source.doc_id]) / (1.0 + share)
