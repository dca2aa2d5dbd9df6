"""The reranker's signals of a passage in the question's language, on hand-built passages."""

import pytest

from backend.retrieval.rerank import signals
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
    assert signals.keyword_score("能量守恒 定律", "能量守恒定律是物理学的基本定律") == pytest.approx(100.0)
    assert signals.keyword_score("能量守恒 定律", "没有相关内容") == 0.0
    half = signals.keyword_score("apple banana", "an apple a day")
    assert 0 < half < 100


def test_semantic_score_maps_cosine_band_and_missing_similarity():
    assert signals.semantic_score(None) == 0.0
    assert signals.semantic_score(0.5) == 0.0
    assert signals.semantic_score(0.99) == 100.0
    assert 0 < signals.semantic_score(0.8) < 100


def test_length_prior_penalises_fragments():
    assert signals.length_score("short") == 0.0
    assert signals.length_score("x" * 400) == 100.0
    assert signals.length_score("x" * 5000) < 100.0


def test_a_latex_question_matches_the_unicode_math_of_a_page():
    """Questions write $\\frac{d^{2}\\sigma}{d\\rho d\\Lambda}$; the PDF's text layer has "dρ dΛd2σ"."""
    question = r"What is the expression for $\frac{d^{2}\sigma}{d\rho d\Lambda}$ and $\tilde{\theta}_{n}$?"
    formula = source("Σ(ρc,Λc) = Z ρc0 dρ Z Λc0 dΛ dρ dΛd2σ , (5.1) with θ̃n fixed")
    prose = source("The expression for the cross section is given in the next section of the text.")
    idf = signals.candidate_idf(question, [formula.text, prose.text])
    assert signals.keyword_score(question, formula.text, idf) > signals.keyword_score(question, prose.text, idf)
    assert {"d2σ", "dρ", "dλ", "θn"} <= set(query_terms(question))
    assert signals.fuzzy_score(r"$\tilde{\theta}_{n}$ fixed", formula.text) == 100.0
