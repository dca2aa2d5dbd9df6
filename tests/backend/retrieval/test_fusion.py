"""Weighted RRF arithmetic on hand-built rankings."""

import pytest

from backend.retrieval.fusion import RankedList, order_by_score, weighted_rrf


def test_weighted_rrf_sums_weight_over_k_plus_rank():
    scores = weighted_rrf([RankedList(["a", "b", "c"], 4.0), RankedList(["c", "a"], 1.0)], k=60)
    assert scores["a"] == pytest.approx(4 / 61 + 1 / 62)
    assert scores["b"] == pytest.approx(4 / 62)
    assert scores["c"] == pytest.approx(4 / 63 + 1 / 61)
    assert order_by_score(scores) == ["a", "c", "b"]


def test_keyword_only_hit_can_outrank_when_weights_say_so():
    scores = weighted_rrf([RankedList(["a"], 1.0), RankedList(["b"], 2.0)], k=10)
    assert order_by_score(scores) == ["b", "a"]


def test_repeated_ids_count_once_per_list_and_zero_weight_lists_are_ignored():
    scores = weighted_rrf([RankedList(["a", "a", "b"], 1.0), RankedList(["b"], 0.0)], k=1)
    assert scores == {"a": pytest.approx(1 / 2), "b": pytest.approx(1 / 4)}
