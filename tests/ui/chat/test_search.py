"""Search without a model in the Chat tab (ui/chat/search.py): what the result's message says."""

from __future__ import annotations

from backend.types import SearchResult, Source
from ui.chat.search import search_markdown

QUESTION = "What was the stock price of Apple in 1850?"
SOURCE = Source("notes.pdf", "d1", 2, 2, 0, "Apples are harvested in autumn.", relevance=31.0, chunk_id="c1")


def test_a_search_that_abstains_says_its_passages_are_the_closest_not_an_answer():
    """Issue 30 item 3: below the threshold the passages are shown as closest, not as an answer."""
    result = SearchResult(QUESTION, "rerank", 8.0, [SOURCE])
    english, chinese = search_markdown(result, "en", 0, abstains=True), search_markdown(result, "zh", 0, abstains=True)
    assert "confidence 8%" in english and "closest passages, not an answer" in english
    assert "> Apples are harvested in autumn." in english
    assert "并非答案" in chinese and "closest" not in chinese


def test_a_search_that_finds_the_answer_shows_its_passages_plainly():
    result = SearchResult(QUESTION, "rerank", 72.0, [SOURCE])
    assert "not an answer" not in search_markdown(result, "en", 0, abstains=False)
