"""The chat's side panels (ui/chat/panels.py): the confidence panel of an answer that abstains, and the
score chart."""

from __future__ import annotations

from backend.answering.abstention import abstained_answer
from backend.retrieval.rerank import composite
from backend.types import SearchResult, Source
from ui.chat.panels import SIGNALS, confidence_html, extractive_markdown, score_chart_html, search_confidence_html

QUESTION = "What was the stock price of Apple in 1850?"
SOURCE = Source("notes.pdf", "d1", 2, 2, 0, "Apples are harvested in autumn.", relevance=31.0, chunk_id="c1")


def _abstained():
    return abstained_answer(QUESTION, SearchResult(QUESTION, "rerank", 8.0, [SOURCE]), QUESTION)


def test_an_abstained_answer_says_so_in_the_panel_in_both_languages():
    """Issue 30 item 3: the panel names the decision, not only a low number."""
    english, chinese = confidence_html(_abstained(), 50.0, "en"), confidence_html(_abstained(), 50.0, "zh")
    assert 'data-mode="abstained"' in english and "closest, not an answer" in english
    assert "not in your documents" in english and "8%" in english
    assert "并非答案" in chinese and "文档中似乎没有答案" in chinese and "closest" not in chinese


def _search_panel(result: SearchResult) -> str:
    """The panel as the Chat tab draws it with warn_below 50 and abstain_below 15."""
    return search_confidence_html(result, 50.0, result.abstains(15.0), "en")


def test_a_search_shows_its_confidence_in_the_panel_as_an_answer_would():
    """Search (no model) has the same calibrated confidence as an answer: the panel shows it, not "–"."""
    found = SearchResult(QUESTION, "rerank", 72.4, [SOURCE])
    abstains = found.abstains(15.0)
    english = search_confidence_html(found, 50.0, abstains, "en")
    chinese = search_confidence_html(found, 50.0, abstains, "zh")
    assert "72%" in english and 'data-mode="search"' in english and "search, no model" in english
    assert "dl-low" not in english and "dl-warn" not in english
    assert "72%" in chinese and "检索（未使用模型）" in chinese


def test_a_search_below_the_thresholds_warns_as_an_answer_would():
    low = _search_panel(SearchResult(QUESTION, "rerank", 30.0, [SOURCE]))
    assert "dl-low" in low and "Low confidence: check the sources" in low
    abstains = _search_panel(SearchResult(QUESTION, "rerank", 8.0, [SOURCE]))
    assert "closest, not an answer" in abstains and "8%" in abstains
    nothing = _search_panel(SearchResult(QUESTION, "rerank", 0.0, []))
    assert "–" in nothing, "no passage: no figure to show"


def test_the_abstention_notice_reads_in_the_page_language():
    english, chinese = extractive_markdown(_abstained(), "en"), extractive_markdown(_abstained(), "zh")
    assert english.startswith("_Your documents do not seem to hold the answer to this question (confidence 8%).")
    assert "notes.pdf" in english and "> Apples are harvested in autumn." in english
    assert chinese.startswith("_您的文档中似乎没有这个问题的答案（置信度 8%）。") and "Your documents" not in chinese


def test_the_chart_shows_every_reranker_signal_bm25_included():
    source = Source(file="a.pdf", doc_id="a", page=3, page_end=3, chunk_index=0, text="t", relevance=80.0)
    source.scores = dict.fromkeys((*composite.SIGNALS, composite.DOCUMENT), 50.0)
    source.scores["bm25"] = 100.0
    chart = score_chart_html([source])
    assert set(source.scores) <= set(SIGNALS)
    assert chart.count("dl-bar-row") == len(source.scores)
    assert ">BM25<" in chart and 'dl-bm25" style="width:100%"' in chart
    assert "得分构成" in score_chart_html([source], lang="zh") and ">BM25<" in score_chart_html([source], lang="zh")
