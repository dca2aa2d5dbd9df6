"""The exported conversation (ui/chat/export.py): answers and searches in order, each with its confidence
and its citations (file, page, passage)."""

from __future__ import annotations

from ui.chat.export import conversation_markdown


def test_answers_and_searches_keep_their_order_confidence_and_citations() -> None:
    turns = [
        {"role": "user", "content": "What is E?"},
        {"role": "assistant", "content": "E is energy [1]."},
        {"role": "user", "content": "And p?"},
        {"role": "assistant", "content": "Not in the documents."},
    ]
    first = [{"file": "a.pdf", "page": 2, "text": "E = mc^2\nline two", "relevance": 71.4, "confidence": 64.0}]
    searched = [{"file": "b.pdf", "page": 5, "text": "momentum p", "relevance": 40, "confidence": 30, "search": "p"}]
    markdown = conversation_markdown("physics", turns, [first, searched, []], "en")
    assert markdown.index("## 1. What is E?") < markdown.index("## 2. p") < markdown.index("## 3. And p?")
    assert "E is energy [1].\n\n**Confidence: 64%**" in markdown
    assert "[1] a.pdf, p2 (relevance 71%)\n\n> E = mc^2\n> line two" in markdown
    assert "_Search without a model_\n\n**Confidence: 30%**" in markdown
    assert "Not in the documents.\n\n**Confidence: –**" in markdown  # an answer without sources
    assert "## 1. 什么" not in conversation_markdown("physics", turns, [first], "zh") and "置信度：64%" in (
        conversation_markdown("physics", turns, [first], "zh")
    )
