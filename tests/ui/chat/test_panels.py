"""The score chart of the answer panel."""

from backend.retrieval.rerank import composite
from backend.types import Source
from ui.chat.panels import SIGNALS, score_chart_html


def test_the_chart_shows_every_reranker_signal_bm25_included():
    source = Source(file="a.pdf", doc_id="a", page=3, page_end=3, chunk_index=0, text="t", relevance=80.0)
    source.scores = dict.fromkeys((*composite.SIGNALS, composite.DOCUMENT), 50.0)
    source.scores["bm25"] = 100.0
    chart = score_chart_html([source])
    assert set(source.scores) <= set(SIGNALS)
    assert chart.count("dl-bar-row") == len(source.scores)
    assert ">BM25<" in chart and 'dl-bm25" style="width:100%"' in chart
    assert "得分构成" in score_chart_html([source], lang="zh") and ">BM25<" in score_chart_html([source], lang="zh")
