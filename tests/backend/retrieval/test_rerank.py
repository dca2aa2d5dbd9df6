"""The composite reranker's signals on hand-built passages."""

import pytest

from backend.retrieval import rerank as rr
from backend.settings import RerankSettings
from backend.text import query_entities, query_terms
from backend.types import Source


def source(text, similarity=None, dense_rank=None, keyword_rank=None, doc="d"):
    return Source(
        file=f"{doc}.pdf",
        doc_id=doc,
        page=1,
        page_end=1,
        chunk_index=0,
        text=text,
        similarity=similarity,
        dense_rank=dense_rank,
        keyword_rank=keyword_rank,
    )


def test_query_terms_skip_single_characters_and_stop_words():
    terms = query_terms("玩家用什么泡封敌人？")
    assert "玩家" in terms and "敌人" in terms
    assert all(len(t) >= 2 for t in terms) and "什么" not in terms
    english = query_terms("What is the capital of the Normandy region?")
    assert "normandy" in english and "capital" in english and "the" not in english


def test_entities_are_acronyms_capitalised_words_numbers_and_long_chinese_terms():
    entities = query_entities("When did the NFL award Super Bowl 50 to Santa Clara?")
    assert {"nfl", "super", "bowl", "50", "santa", "clara"} <= set(entities)
    assert "when" not in entities
    assert "国家统计局" in query_entities("国家统计局发布了什么？")


def test_keyword_coverage_counts_words_found():
    assert rr.keyword_score("能量守恒 定律", "能量守恒定律是物理学的基本定律") == pytest.approx(100.0)
    assert rr.keyword_score("能量守恒 定律", "没有相关内容") == 0.0
    half = rr.keyword_score("apple banana", "an apple a day")
    assert 0 < half < 100


def test_signals_are_bounded_and_relevance_is_their_weighted_mean():
    weights = RerankSettings(fuzzy=1, keyword=1, semantic=1, length=1, rank=1, entity=1, document=0)
    candidates = [
        source("Super Bowl 50 was played at Levi's Stadium in Santa Clara, California. " * 3, 0.9, 1, 2),
        source("unrelated text about cooking pasta with tomatoes and basil", 0.72, 2, None),
        source("x", 0.5, None, 1),
    ]
    ranked = rr.rerank("Where was Super Bowl 50 played?", candidates, weights)
    for s in ranked:
        assert set(s.scores) == {*rr.SIGNALS, rr.DOCUMENT}
        assert all(0.0 <= v <= 100.0 for v in s.scores.values())
        assert s.relevance == pytest.approx(sum(s.scores[name] for name in rr.SIGNALS) / 6)
        assert 0.0 <= s.relevance <= 100.0
    assert ranked[0].text.startswith("Super Bowl 50")


def test_a_passage_beside_the_best_match_outranks_a_look_alike_from_another_document():
    """Questions are mostly about one document: of two passages that score the same on their own, the one
    whose document holds the best match ranks first, and the document's best passage keeps its own score."""
    weights = RerankSettings()
    best = source("Kublai Khan founded the Yuan dynasty in 1271 and ruled China from Khanbaliq.", 0.90, 1, 1, "yuan")
    beside = source("His reign saw paper money and a postal relay system across the empire.", 0.80, 3, None, "yuan")
    elsewhere = source("His reign saw paper money and a postal relay system across the empire.", 0.80, 2, None, "misc")
    ranked = rr.rerank("What did Kublai Khan's reign see?", [best, elsewhere, beside], weights)
    assert [s.doc_id for s in ranked[:2]] == ["yuan", "yuan"], [(s.doc_id, s.relevance) for s in ranked]
    top = ranked[0]
    assert top is best and top.scores[rr.DOCUMENT] == pytest.approx(top.relevance)
    assert beside.relevance > elsewhere.relevance
    assert (
        beside.scores[rr.DOCUMENT] == pytest.approx(best.relevance) and elsewhere.scores[rr.DOCUMENT] < best.relevance
    )


def test_without_the_document_share_the_relevance_is_the_passage_own():
    candidates = [source("alpha beta gamma " * 10, 0.85, 1, 1, "a"), source("alpha " * 30, 0.75, 2, None, "a")]
    ranked = rr.rerank("alpha beta gamma?", candidates, RerankSettings(document=0))
    weights = RerankSettings()
    own = sum(getattr(weights, name) * ranked[1].scores[name] for name in rr.SIGNALS) / sum(
        getattr(weights, name) for name in rr.SIGNALS
    )
    assert ranked[1].relevance == pytest.approx(own)


def test_semantic_score_maps_cosine_band_and_missing_similarity():
    assert rr.semantic_score(None) == 0.0
    assert rr.semantic_score(0.5) == 0.0
    assert rr.semantic_score(0.99) == 100.0
    assert 0 < rr.semantic_score(0.8) < 100


def test_length_prior_penalises_fragments():
    assert rr.length_score("short") == 0.0
    assert rr.length_score("x" * 400) == 100.0
    assert rr.length_score("x" * 5000) < 100.0


def test_a_latex_question_matches_the_unicode_math_of_a_page():
    """Questions write $\\frac{d^{2}\\sigma}{d\\rho d\\Lambda}$; the PDF's text layer has "dρ dΛd2σ"."""
    question = r"What is the expression for $\frac{d^{2}\sigma}{d\rho d\Lambda}$ and $\tilde{\theta}_{n}$?"
    formula = source("Σ(ρc,Λc) = Z ρc0 dρ Z Λc0 dΛ dρ dΛd2σ , (5.1) with θ̃n fixed")
    prose = source("The expression for the cross section is given in the next section of the text.")
    idf = rr.candidate_idf(question, [formula.text, prose.text])
    assert rr.keyword_score(question, formula.text, idf) > rr.keyword_score(question, prose.text, idf)
    assert {"d2σ", "dρ", "dλ", "θn"} <= set(query_terms(question))
    assert rr.fuzzy_score(r"$\tilde{\theta}_{n}$ fixed", formula.text) == 100.0


def test_reference_list_chunks_lose_to_the_passage_unless_references_are_asked_for():
    weights = RerankSettings()
    text = "Short text clustering with topic models and sparse vectors, evaluated on news titles."
    passage, bibliography = source(text, similarity=0.85), source(text, similarity=0.85)
    bibliography.kind = "references"
    ranked = rr.rerank("How does short text clustering use topic models?", [bibliography, passage], weights)
    assert ranked[0] is passage and bibliography.relevance < passage.relevance
    ranked = rr.rerank("Which publications on short text clustering are cited?", [bibliography, passage], weights)
    assert bibliography.relevance == pytest.approx(passage.relevance, abs=3)  # only the rank prior differs
