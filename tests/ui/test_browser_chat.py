"""The Chat tab in a real browser (Debian chromium + Playwright), on a knowledge base of the physics
sample: the sources table's order and the chat's labels for screen readers. Outside CI skipped when
/usr/bin/chromium is missing.
"""

from __future__ import annotations

import re

import pytest

from tests.ui import browser_support as ui
from tests.ui.conftest import SAMPLE_PDF, RunningApp, open_browsers

pytestmark = pytest.mark.slow
ui.skip_without_chromium()

KB = "chat-walk"


@pytest.fixture(scope="module")
def physics_kb(doclens_app: RunningApp, browsers) -> str:
    """A knowledge base holding the physics sample, uploaded through the page once for the module."""
    page = browsers()
    ui.new_kb_with(page, doclens_app.url, KB, SAMPLE_PDF)
    page.close()
    return KB


@pytest.fixture(scope="module")
def browsers(tmp_path_factory):
    """Module-wide browsers (the KB is uploaded once); see tests/ui/conftest.py's ``browsers``."""
    with open_browsers(tmp_path_factory.mktemp("chat-profiles")) as opener:
        yield opener


def chat_on(page, url: str, kb: str) -> None:
    page.goto(url)
    page.locator("#chatbot").wait_for()
    ui.wait_idle(page)
    if page.locator("#kb-select input").input_value() != kb:
        ui.choose(page, "kb-select", kb)
        ui.wait_idle(page)


def test_the_sources_table_is_in_relevance_order(doclens_app: RunningApp, physics_kb: str, browsers) -> None:
    """Issue 26 item 3: the table read 75 %, 70 %, 63 %, 66 %: rows go by the relevance they show."""
    page = browsers()
    chat_on(page, doclens_app.url, physics_kb)
    ui.choose(page, "doc-filter", SAMPLE_PDF.name)
    ui.ask(page, "第2页的简谐振子能级公式")
    rows = ui.source_rows(page, SAMPLE_PDF.name)
    cells = [rows.nth(i).locator("td").all_inner_texts() for i in range(rows.count())]
    shown = [int(row[3].strip().rstrip("%")) for row in cells]
    assert len(shown) >= 2 and shown == sorted(shown, reverse=True), cells
    rows.first.click()
    page.locator("#page-preview img").wait_for()
    label = page.locator("#page-preview").inner_text()
    assert f"[{cells[0][0].strip()}]" in label, (label, cells[0])


def test_the_question_bubble_is_labelled_in_plain_text(doclens_app: RunningApp, physics_kb: str, browsers) -> None:
    """Issue 26 item 14: the question bubble's aria-label read '&lt;span class="dl-currency"&gt;…'."""
    page = browsers()
    chat_on(page, doclens_app.url, physics_kb)
    question = "Does <b>it</b> cost $5 and $10?"
    ui.ask(page, question)
    labels = page.locator("#chatbot [aria-label*='message']").evaluate_all(
        "(nodes) => nodes.map((n) => n.getAttribute('aria-label'))"
    )
    asked = [text for text in labels if text.startswith("user")]
    assert asked and all(question in text for text in asked), labels
    assert not any(mark in text for text in labels for mark in ("<span", "&lt;", "&#36;", "dl-cite")), labels


def test_stop_ends_a_streaming_answer(doclens_app: RunningApp, physics_kb: str, browsers) -> None:
    """Issue 26 item 16: while an answer streams Stop stands where Send was; it ends the answer."""
    page = browsers()
    chat_on(page, doclens_app.url, physics_kb)
    fake = doclens_app.fake
    fake.stream_chunk_chars, fake.stream_delay = 4, 0.25  # about a minute for the whole answer
    try:
        ui.field(page, "question").fill("What is the key formula in the document?")
        page.locator("#send").click()
        page.locator("#stop").wait_for()
        assert not page.locator("#send").is_visible(), "Send makes way for Stop"
        answer = page.locator("#chatbot .message-row.bot-row, #chatbot .bot").last
        page.wait_for_function(
            "() => [...document.querySelectorAll('#chatbot .bot-row, #chatbot .bot')].pop()?.innerText.length > 10",
            timeout=ui.ANSWER_TIMEOUT_MS,
        )
        page.locator("#stop").click()
        page.locator("#send").wait_for()
        assert not page.locator("#stop").is_visible()
        stopped = settled_text(answer, page)  # a piece already on its way when Stop was pressed may land
        page.wait_for_timeout(2_000)
        assert answer.inner_text() == stopped, "the answer stopped growing"
        assert stopped.startswith("According") and "E=mc" not in stopped, stopped
    finally:
        fake.stream_chunk_chars, fake.stream_delay = 12, 0.0
    ui.ask(page, "And the energy levels?")  # the next question is answered as usual
    page.wait_for_function(
        "() => document.querySelector('#chatbot').innerText.includes('E=mc')", timeout=ui.ANSWER_TIMEOUT_MS
    )


def settled_text(element, page, quiet_ms: int = 1_000, timeout_ms: int = 10_000) -> str:
    """The element's text once it has not changed for ``quiet_ms`` (a stream goes on every 250 ms)."""
    text, still_for = element.inner_text(), 0
    for _ in range(timeout_ms // 250):
        page.wait_for_timeout(250)
        now = element.inner_text()
        still_for = still_for + 250 if now == text else 0
        text = now
        if still_for >= quiet_ms:
            return text
    raise AssertionError(f"still growing {timeout_ms} ms after Stop: {text!r}")


def test_the_language_switch_keeps_the_conversation_and_redraws_the_panel(
    doclens_app: RunningApp, physics_kb: str, browsers
) -> None:
    """Issue 26 item 9: the switch happens in place; the answer stays and its side panel (sources table,
    confidence, score breakdown) is drawn again in the new language."""
    page = browsers()
    chat_on(page, doclens_app.url, physics_kb)
    ui.ask(page, "What is the zero-point energy?")
    assert "Confidence" in page.locator("#confidence").inner_text()
    page.locator("#language-switch").get_by_text("中文").click()
    page.get_by_role("tab", name="知识库").wait_for()
    ui.wait_idle(page)
    assert page.locator("#chatbot").get_by_text("zero-point energy").count() >= 1, "the conversation stayed"
    page.locator("#confidence").get_by_text(re.compile("置信度|文本来源")).wait_for()
    assert "文件" in page.locator("#sources").inner_text()
    assert "Score breakdown" not in page.locator("body").inner_text()
