"""Exporting a conversation as Markdown in a real browser (Debian chromium + Playwright): a model answer
and a search, each with its confidence and its citations (file, page, passage) (issue 26 item 18).
Outside CI skipped when /usr/bin/chromium is missing.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.ui import browser_support as ui
from tests.ui.conftest import ARTIFACTS, SAMPLE_PDF, RunningApp

pytestmark = pytest.mark.slow
ui.skip_without_chromium()


def test_a_conversation_is_exported_with_its_citations_and_confidence(doclens_app: RunningApp, page) -> None:
    ui.new_kb_with(page, doclens_app.url, "export-walk", SAMPLE_PDF)
    ui.open_tab(page, "Chat")
    ui.choose(page, "kb-select", "export-walk")
    ui.wait_idle(page)
    ui.ask(page, "第2页的简谐振子能级公式")
    ui.source_rows(page, SAMPLE_PDF.name)
    ui.field(page, "question").fill("energy levels")
    page.locator("#search").click()
    page.locator("#chatbot").get_by_text("Search").last.wait_for(timeout=ui.ANSWER_TIMEOUT_MS)
    ui.wait_idle(page)
    page.locator("#chat-export").click()
    download = page.locator("#chat-export-download")
    download.get_by_text("Download doclens-conversation.md").wait_for()
    with page.expect_download() as info:
        download.click()
    assert info.value.suggested_filename == "doclens-conversation.md"
    markdown = Path(info.value.path()).read_text(encoding="utf-8")
    (ARTIFACTS / "exported-conversation.md").write_text(markdown, encoding="utf-8")
    assert "## 1. 第2页的简谐振子能级公式" in markdown and "## 2. energy levels" in markdown, markdown[:600]
    assert "According to the sources" in markdown, "the model's answer as it wrote it"
    assert len(re.findall(r"\*\*Confidence: \d+%\*\*", markdown)) == 2, markdown
    assert re.search(rf"\[1\] {re.escape(SAMPLE_PDF.name)}, p\d+ \(relevance \d+%\)\n\n> \S", markdown), markdown
    assert "Search without a model" in markdown
    page.locator("#clear").click()
    download.wait_for(state="hidden")
