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


def test_fuse_results_keeps_the_users_question_in_charge() -> None:
    """Issue 12 item 21: a rewrite that found other things ranks below what the user's words found."""
    from backend.retrieval.fusion import fuse_results
    from backend.types import SearchResult, Source

    def source(chunk_id: str, relevance: float) -> Source:
        return Source(f"{chunk_id}.pdf", chunk_id, 1, 1, 0, chunk_id, relevance=relevance, chunk_id=chunk_id)

    original = SearchResult("q", "rerank", 70.0, [source("right", 60), source("b", 40)], queries=["q"])
    rewritten = SearchResult(
        "r", "rerank", 90.0, [source("other", 95), source("right", 20), source("b", 10)], queries=["r"]
    )
    fused = fuse_results(original, rewritten, top=3)
    assert [s.chunk_id for s in fused.sources] == ["right", "b", "other"]  # found by both beats found once
    assert fused.sources[0].relevance == 60, "each source keeps its best relevance"
    assert fused.queries == ["q", "r"]
    # Issue 30: the rewrite's first source is in the fused top too, so its confidence holds for the list
    # (a vague follow-up asked in the user's words read 5 % beside the right passage).
    assert fused.confidence == 90.0
    assert fuse_results(rewritten, original, top=3).confidence == 90.0
