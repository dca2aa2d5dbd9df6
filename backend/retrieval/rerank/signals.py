"""The reranker's signals of a passage in the question's language, each 0-100."""

from __future__ import annotations

import math
from typing import Optional, Sequence

from rapidfuzz import fuzz

from backend.text import normalize, query_entities, query_terms, searchable

# Cosine similarities of e5-style models sit in a narrow band; this maps that band onto 0-100.
SEMANTIC_FLOOR = 0.70
SEMANTIC_CEILING = 0.92
# How fast the rank prior falls with the fused rank (tuned on the dev question sets: a gentle slope lets the
# other signals reorder the head of the list).
RANK_SLOPE = 0.075


def fuzzy_score(question: str, text: str) -> float:
    """How well the question (as a whole) matches some part of the chunk."""
    q = normalize(question)
    if not q.strip():
        return 0.0
    return float(fuzz.partial_ratio(q, normalize(text)))


def keyword_score(question: str, text: str, idf: Optional[dict[str, float]] = None) -> float:
    """Share of the question's content words found in the chunk, weighted by how rare each word is among
    the candidates (``idf``; a word every candidate has tells nothing) and by its length."""
    terms = query_terms(question)
    if not terms:
        return 0.0
    haystack = searchable(text)
    weights = [math.log1p(len(t)) * (idf.get(t, 1.0) if idf else 1.0) for t in terms]
    total = sum(weights)
    if total <= 0:
        return 0.0
    found = sum(w for t, w in zip(terms, weights) if t in haystack)
    return 100.0 * found / total


def candidate_idf(question: str, texts: Sequence[str]) -> dict[str, float]:
    """BM25-style inverse document frequency of the question's words within the candidate pool."""
    haystacks = [searchable(t) for t in texts]
    n = len(haystacks)
    idf = {}
    for term in query_terms(question):
        df = sum(1 for h in haystacks if term in h)
        idf[term] = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
    return idf


def entity_score(question: str, text: str) -> float:
    entities = query_entities(question)
    if not entities:
        return 0.0
    haystack = searchable(text)
    return 100.0 * sum(1 for e in entities if e in haystack) / len(entities)


def semantic_score(similarity: float | None) -> float:
    if similarity is None:
        return 0.0
    return 100.0 * min(1.0, max(0.0, (similarity - SEMANTIC_FLOOR) / (SEMANTIC_CEILING - SEMANTIC_FLOOR)))


def length_score(text: str) -> float:
    """A prior against fragments (headings, captions) and against walls of text."""
    n = len(text.strip())
    if n < 20:
        return 0.0
    if n < 120:
        return 100.0 * (n - 20) / 100
    if n <= 1200:
        return 100.0
    return max(40.0, 100.0 - (n - 1200) / 40)


def bm25_score(lead: float) -> float:
    """How close the passage's BM25 score comes to the keyword search's leader (1.0: it is the leader). The
    other signals count the question's words evenly; BM25 also weighs their rarity in the whole library and
    the passage's length, which on long papers tells the passage that holds the rare terms from its
    paraphrasing neighbours."""
    return 100.0 * min(1.0, max(0.0, lead))


def rank_score(fused_rank: int, candidates: int) -> float:
    """The fused (RRF) rank as a prior: 100 for the first, falling smoothly."""
    if candidates <= 1:
        return 100.0
    return 100.0 / (1.0 + RANK_SLOPE * (fused_rank - 1))
