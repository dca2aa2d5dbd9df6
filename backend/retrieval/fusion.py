"""Weighted Reciprocal Rank Fusion: score(d) = sum_i w_i / (k + rank_i(d)), ranks 1-based."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Mapping, Optional, Sequence


@dataclass
class RankedList:
    ids: Sequence[Hashable]  # best first
    weight: float
    item_weights: Optional[Mapping[Hashable, float]] = None  # a factor per id (absent: 1.0)


def weighted_rrf(lists: Sequence[RankedList], k: float = 60.0) -> dict[Hashable, float]:
    """Fused scores of every id that appears in any list; an id missing from a list gets nothing from it."""
    scores: dict[Hashable, float] = {}
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


def order_by_score(scores: dict[Hashable, float]) -> list[Hashable]:
    """Ids by descending score; ties keep first-seen order (dicts keep insertion order)."""
    return sorted(scores, key=lambda item: -scores[item])
