"""The reranker's signals for a passage in another language than the question, on hand-built passages."""

from backend.retrieval.query_plan import plan
from backend.retrieval.rerank.composite import rerank
from backend.retrieval.rerank.crosslingual import cross_signals
from backend.settings import RerankSettings
from backend.types import Source


def source(text, lang, similarity=0.85):
    return Source(
        file="f.pdf",
        doc_id="d",
        page=1,
        page_end=1,
        chunk_index=0,
        text=text,
        similarity=similarity,
        dense_rank=1,
        lang=lang,
    )


def test_cross_signals_find_the_rendered_words_and_the_anchors():
    question_plan = plan("2001年美国广播公司的标志是什么颜色的？")
    hit = cross_signals(question_plan, "In 2001 the ABC logo changed its color to black and yellow.", 0.84)
    miss = cross_signals(question_plan, "The river flows north through the valley.", 0.84)
    assert hit["fuzzy"] == 0.0 and hit["keyword"] > miss["keyword"] and hit["entity"] == 100.0
    assert miss["entity"] == 0.0 and 0.0 < hit["semantic"] <= 100.0


def test_a_question_word_is_found_when_a_word_of_the_passage_renders_to_it():
    """The list gives 标志 its first senses (sign, mark, symbol); the passage says "logo", which renders
    back to 标志. Likewise an English question's "doctor" (先生, 医生, 博士) is found in a passage's 大夫."""
    assert "logo" not in dict(plan("美国广播公司的标志是什么?").bridge)["标志"]
    chinese = plan("美国广播公司的标志是什么?")
    with_logo = cross_signals(chinese, "The network unveiled a new logo for the fall season.", 0.84)
    without = cross_signals(chinese, "The network unveiled a new schedule for the fall season.", 0.84)
    assert with_logo["keyword"] > without["keyword"]
    english = plan("Which doctor treated the king?")
    assert "大夫" not in dict(english.bridge)["doctor"]
    named = cross_signals(english, "国王请来了一位大夫。", 0.84)
    other = cross_signals(english, "国王请来了一位商人。", 0.84)
    assert named["keyword"] > other["keyword"]


def test_rerank_scores_other_language_candidates_with_the_cross_signals():
    question_plan = plan("2001年美国广播公司的标志是什么颜色的？")
    candidates = [
        source("美国广播公司的标志在2001年是黑黄色的。", "zh"),
        source("In 2001 the ABC logo changed its color to black and yellow.", "en"),
    ]
    ranked = rerank(question_plan.question, candidates, RerankSettings(), question_plan)
    by_lang = {s.lang: s for s in ranked}
    assert by_lang["en"].bridged and not by_lang["zh"].bridged
    assert set(by_lang["en"].scores) == set(by_lang["zh"].scores)
    assert all(0.0 <= v <= 100.0 for s in ranked for v in s.scores.values())
