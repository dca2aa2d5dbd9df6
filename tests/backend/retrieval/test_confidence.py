"""Confidence: bounded, monotone in evidence, and the calibration/ECE arithmetic."""

import pytest

from backend.retrieval.confidence import FEATURES, confidence, features
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


def test_a_same_language_top_is_read_on_its_own_scale_in_a_mixed_library():
    top = src(60, keyword=30, semantic=40)
    across = [src(55, keyword=100, semantic=90) for _ in range(4)]
    for s in across:
        s.bridged = True  # other-language passages below the top, scored through the term list
    values = features([top, *across])
    assert values["bridged"] == 0.0 and values["bridged_relevance"] == 0.0
    assert values["top_keyword"] == 0.3 and values["top_semantic"] == 0.4
    assert features([src(60), *across])["margin"] == pytest.approx(0.05)  # the ranking's own runner-up
    bridged_top = features([*across, top])
    assert bridged_top["bridged"] == 1.0 and bridged_top["top_keyword"] == 1.0


@pytest.mark.parametrize("lang,english", [("en", 1.0), ("zh", 0.0)])
def test_a_top_source_scored_across_languages_is_read_per_direction(lang, english):
    top = src(40, keyword=20, semantic=50)
    top.bridged, top.lang = True, lang
    values = features([top, src(30)])
    assert values["bridged"] == 1.0 and values["bridged_relevance"] == 0.4
    assert values["bridged_english"] == english and values["bridged_english_relevance"] == 0.4 * english
