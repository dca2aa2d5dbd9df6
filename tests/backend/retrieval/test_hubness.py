"""Hubness of passages towards questions in the other language (backend/retrieval/hubness.py), with the
real bundled embedding model."""

from __future__ import annotations

import pytest

from backend.retrieval.hubness import HubScores, corrections, reference_questions
from backend.text import text_language


@pytest.fixture(scope="module")
def hubs(service) -> HubScores:
    return HubScores(lambda: service.embedder)


def test_the_reference_questions_are_parallel_questions_in_each_language():
    chinese, english = reference_questions("zh"), reference_questions("en")
    assert len(chinese) == len(english) >= 50
    assert all(text_language(q) == "zh" for q in chinese)
    assert all(text_language(q) == "en" for q in english)
    assert reference_questions("fr") == []


def test_a_passage_quoting_the_questions_language_is_more_of_a_hub(hubs, service):
    # The passage that topped unrelated Chinese questions in xl-dev-zh2en quoted 樞密院 in an English text.
    quoting = "The Privy Council (Chinese: 樞密院) managed military affairs, and the Censorate conducted inspection."
    plain = "The Privy Council managed military affairs, and the Censorate conducted inspection."
    vectors = service.embedder.embed_passages([quoting, plain])
    towards_chinese = hubs.of("zh", vectors)
    assert towards_chinese[0] > towards_chinese[1] + 0.02, towards_chinese
    assert hubs.of("en", vectors).shape == (2,)


def test_no_reference_questions_means_no_hubness(hubs, service):
    vectors = service.embedder.embed_passages(["A passage."])
    assert hubs.of("fr", vectors).tolist() == [0.0]


def test_corrections_lower_hubs_around_the_candidates_median():
    fixes = corrections({"hub": 0.80, "middle": 0.75, "plain": 0.70}, weight=0.6)
    assert fixes["middle"] == 0.0
    assert fixes["hub"] == pytest.approx(-0.03)
    assert fixes["plain"] == pytest.approx(0.03)


def test_one_candidate_or_no_weight_is_not_corrected():
    assert corrections({"only": 0.9}, weight=0.6) == {}
    assert corrections({"a": 0.9, "b": 0.7}, weight=0.0) == {}
