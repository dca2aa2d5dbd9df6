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


def test_a_formula_kept_as_an_image_reads_in_the_page_s_language_not_as_the_parser_s_mark() -> None:
    turns = [{"role": "user", "content": "E0?"}, {"role": "assistant", "content": "See [1]."}]
    source = {
        "file": "a.pdf",
        "page": 1,
        "text": "Ground state [formula image p1_eq2, OCR: E0=hω] (3)",
        "relevance": 80,
    }
    chinese = conversation_markdown("physics", turns, [[{**source, "confidence": 80}]], "zh")
    english = conversation_markdown("physics", turns, [[{**source, "confidence": 80}]], "en")
    assert "> Ground state ［公式为图片；OCR 识别为：E0=hω］ (3)" in chinese
    assert "> Ground state [formula shown as an image; OCR reads: E0=hω] (3)" in english
    assert "[formula image" not in chinese + english
