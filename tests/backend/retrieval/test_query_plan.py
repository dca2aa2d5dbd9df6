"""A question's plan across languages on hand-built questions: language, anchors, bridge, and how keyword
hits count per candidate language in the fusion."""

from backend.retrieval import query_plan as xl
from backend.retrieval.fusion import RankedList, weighted_rrf
from backend.retrieval.term_list import term_list
from backend.settings import RetrievalSettings
from backend.store.base import ChunkRow, Hit


def test_the_term_list_renders_words_both_ways():
    terms = term_list()
    assert "color" in terms.english("颜色")
    assert "颜色" in terms.chinese("colors")  # a plural finds the sense "color"
    assert "雇用" in terms.english("雇用") or "hire" in terms.english("雇用")
    assert terms.chinese("hired")


def test_plan_knows_the_question_language_anchors_and_bridge():
    plan = xl.plan("2001年美国广播公司的ABC标志是什么颜色的？")
    assert plan.lang == "zh" and plan.other == "en"
    assert {"2001", "abc"} <= set(plan.anchors)
    assert any(term == "颜色" and "color" in renderings for term, renderings in plan.bridge)
    assert "color" in plan.bridge_query() and "2001" in plan.bridge_query()
    english = xl.plan("Who was hired to produce ABC's 2001-02 identity?")
    assert english.lang == "en" and {"abc", "2001"} <= set(english.anchors) and "who" not in english.anchors
    assert "身份" in english.bridge_query()


def test_a_chunk_crosses_only_when_both_languages_are_known_and_differ():
    plan = xl.plan("什么颜色？")
    assert plan.crosses("en") and not plan.crosses("zh") and not plan.crosses("")
    assert plan.question_for("zh") == "什么颜色？" and plan.question_for("en") is None
    translated = xl.plan("什么颜色？", ["什么颜色？", "What color?"])
    assert translated.question_for("en") == "What color?"


def test_keyword_hits_count_fully_only_in_their_query_language():
    def hit(chunk_id, lang):
        return Hit(ChunkRow(chunk_id, "d", "f.pdf", 1, 1, 0, "text", lang=lang), 1.0)

    question_run = xl.KeywordRun("zh", [hit("en-chunk", "en"), hit("zh-chunk", "zh")])
    bridge_run = xl.KeywordRun("en", [hit("zh-chunk", "zh"), hit("en-chunk", "en")], bridge=True)
    weights = RetrievalSettings()
    assert question_run.factor("zh") == 1.0 and question_run.factor("en") == weights.cross_keyword_factor
    assert bridge_run.factor("zh") == 0.0 and bridge_run.factor("en") == weights.bridge_weight
    fused = weighted_rrf(
        [RankedList([h.row.id for h in r.hits], 1.0, r.item_weights()) for r in (question_run, bridge_run)], k=60
    )
    assert fused["zh-chunk"] == 1.0 / 62
    assert abs(fused["en-chunk"] - (weights.cross_keyword_factor / 61 + weights.bridge_weight / 62)) < 1e-12


def test_the_bridge_search_is_left_out_when_the_model_translated():
    plan = xl.plan("美国广播公司的标志是什么颜色的？")
    assert [bridge for _, _, bridge in xl.keyword_queries(plan, [plan.question])] == [False, True]
    translated = xl.plan(plan.question, [plan.question, "What color is the ABC logo?"])
    runs = xl.keyword_queries(translated, [plan.question, "What color is the ABC logo?"])
    assert [(lang, bridge) for _, lang, bridge in runs] == [("zh", False), ("en", False)]


def test_words_jieba_cuts_are_joined_where_the_term_list_has_them_whole():
    assert "inequality" in dict(xl.plan("不平等如何阻碍增长?").bridge)["不平等"]  # jieba: 不 | 平等
    assert "kievan" in dict(xl.plan("成吉思汗的孙子哪一年入侵基辅罗斯?").bridge)["基辅罗斯"]  # 基辅 | 罗斯


def test_a_word_the_list_lacks_is_rendered_through_the_longest_entries_it_is_made_of():
    renderings = dict(xl.plan("谁获得了诺贝尔经济学奖?").bridge)["诺贝尔经济学奖"]
    assert {"nobel", "economics"} <= set(renderings)
