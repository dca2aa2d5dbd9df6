"""Confidence: bounded, monotone in evidence, and the calibration/ECE arithmetic."""

import pytest

from backend.retrieval.confidence import FEATURES, confidence, features, fit_calibration, reliability
from backend.types import Source


def src(relevance, keyword=0.0, semantic=0.0, both=True):
    s = Source(
        file="f",
        doc_id="d",
        page=1,
        page_end=1,
        chunk_index=0,
        text="t",
        relevance=relevance,
        dense_rank=1 if both else None,
        keyword_rank=1,
    )
    s.scores = {"keyword": keyword, "semantic": semantic, "entity": 0.0}
    return s


def test_confidence_is_bounded_and_rises_with_evidence():
    assert confidence([]) == 0.0
    weak = confidence([src(10), src(9)])
    strong = confidence([src(90, keyword=100, semantic=90), src(40)])
    assert 0.0 <= weak < strong <= 100.0


def test_features_are_in_unit_range():
    values = features([src(80, 50, 60), src(70, 20, 30, both=False)])
    assert set(values) == set(FEATURES)
    assert all(0.0 <= v <= 1.0 for v in values.values())


def test_fit_learns_the_direction_of_a_separable_signal():
    rows = [{name: (1.0 if i % 2 else 0.0) if name == "top_keyword" else 0.5 for name in FEATURES} for i in range(200)]
    labels = [bool(i % 2) for i in range(200)]
    model = fit_calibration(rows, labels, l2=1.0)
    assert model["weights"]["top_keyword"] > 1.0


def test_reliability_table_and_ece():
    report = reliability([90, 90, 10, 10], [True, False, False, False], bins=10)
    assert report["bins"] == [
        {"confidence": 0.1, "accuracy": 0.0, "n": 2},
        {"confidence": 0.9, "accuracy": 0.5, "n": 2},
    ]
    assert report["ece"] == pytest.approx(0.5 * 0.1 + 0.5 * 0.4)
