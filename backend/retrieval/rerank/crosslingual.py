"""Reranker signals for a passage in another language than the question, scored without a translation.

The question's words reach such a passage only through the bilingual term list (the plan's *bridge*) and
what survives translation (its *anchors*: numbers, Latin names, acronyms). So keyword coverage is counted
through the bridge both ways (a question word is found when its rendering is in the passage, or when a word
of the passage renders to it), entities through the anchors, the fuzzy match is dropped and the semantic
score leans on the cosine corrected for hubness (``backend.retrieval.hubness``). The weights are the
``rerank_cross`` settings.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Mapping, Optional

from backend.retrieval.query_plan import QuestionPlan
from backend.retrieval.rerank.signals import semantic_score
from backend.retrieval.term_list import term_list
from backend.settings import CrossRerankSettings
from backend.text import HAN, normalize

_WORD = re.compile(r"[a-z0-9]+")
_ENGLISH_WORD = re.compile(r"[a-z][a-z\-']*[a-z]")
_CJK_TERM = re.compile(f"^[{HAN}]+$")
CROSS_SIGNALS = ("fuzzy", "keyword", "semantic", "length", "rank", "entity", "bm25")


def cross_signals(
    plan_: QuestionPlan, text: str, similarity: Optional[float], weights: Optional[CrossRerankSettings] = None
) -> dict[str, float]:
    """fuzzy, keyword, semantic and entity for a passage in the other language (length and rank as usual)."""
    shift = (weights or CrossRerankSettings()).semantic_shift
    haystack = normalize(text)
    words = set(_WORD.findall(haystack))
    return {
        "fuzzy": 0.0,
        "keyword": _bridge_coverage(plan_, haystack, words),
        "semantic": semantic_score(None if similarity is None else similarity + shift),
        "entity": 100.0 * sum(_found(a, haystack, words) for a in plan_.anchors) / len(plan_.anchors)
        if plan_.anchors
        else 0.0,
    }


def _bridge_items(plan_: QuestionPlan) -> list[tuple[str, tuple[str, ...]]]:
    return [(t, r) for t, r in plan_.bridge] + [(a, (a,)) for a in plan_.anchors]


def _bridge_coverage(plan_: QuestionPlan, haystack: str, words: set[str]) -> float:
    """Share of the question's words found in the passage, longer words counting more. A word is found when
    one of its renderings (or, for an anchor, the word itself) is in the passage, or when a word of the
    passage renders back to it: the list gives a word's first senses only (标志 -> sign, mark, symbol),
    while the passage's "logo" renders to 标志. (Weighting by rarity among the candidates measured worse.)"""
    items = _bridge_items(plan_)
    if not items:
        return 0.0
    bridged = {term for term, _ in plan_.bridge}
    back = english_renderings(haystack) if bridged and plan_.lang == "zh" else frozenset()
    weights = [math.log1p(len(t)) for t, _ in items]
    found = sum(
        w
        for (term, renderings), w in zip(items, weights)
        if any(_found(r, haystack, words) for r in renderings)
        or (term in bridged and _rendered_back(term, plan_.lang, haystack, back))
    )
    return 100.0 * found / sum(weights)


@lru_cache(maxsize=2048)  # the candidates of the last ~50 questions: a few MB
def english_renderings(haystack: str) -> frozenset[str]:
    """The Chinese words the English words of a (normalised) passage render to."""
    terms = term_list()
    if terms is None:
        return frozenset()
    return frozenset(r for word in set(_ENGLISH_WORD.findall(haystack)) for r in terms.chinese(word))


@lru_cache(maxsize=4096)
def _chinese_rendering_to(english_word: str) -> tuple[str, ...]:
    terms = term_list()
    return terms.rendered_to(english_word) if terms is not None else ()


def _rendered_back(term: str, question_lang: str, haystack: str, back: frozenset[str]) -> bool:
    """Does a word of the passage render to the question's word? A Chinese question's word is looked up
    among the renderings of the English passage's words; an English question's word is looked for as every
    short Chinese word that renders to it, inside the Chinese passage (no segmentation needed)."""
    if question_lang == "zh":
        return term in back
    return any(word in haystack for word in _chinese_rendering_to(term))


def _found(term: str, haystack: str, words: set[str]) -> bool:
    if _CJK_TERM.match(term):
        return term in haystack
    return term in words or (len(term) >= 4 and any(w.startswith(term) for w in words))


def cross_relevance(scores: Mapping[str, float], weights: CrossRerankSettings) -> float:
    """The weighted mean of the signals with the ``rerank_cross`` weights."""
    total = sum(getattr(weights, name) for name in CROSS_SIGNALS) or 1.0
    return sum(getattr(weights, name) * scores.get(name, 0.0) for name in CROSS_SIGNALS) / total
