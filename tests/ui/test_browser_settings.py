"""The Settings tab in a real browser (Debian chromium + Playwright): what Test checks and what the
embedding fields say and allow. Outside CI skipped when /usr/bin/chromium is missing.
"""

from __future__ import annotations

import pytest

from backend.processes import free_port
from tests.ui.browser_support import field, open_tab, skip_without_chromium, wait_idle
from tests.ui.conftest import RunningApp

pytestmark = pytest.mark.slow
skip_without_chromium()


def open_settings(page, url: str) -> None:
    page.goto(url)
    page.locator("#chatbot").wait_for()
    wait_idle(page)
    open_tab(page, "Settings")
    wait_idle(page)


def test_test_chat_tests_what_is_typed(doclens_app: RunningApp, page) -> None:
    """Issue 26 item 1: a closed port typed in the form was "✓ Connected" to the applied endpoint."""
    open_settings(page, doclens_app.url)
    closed = f"http://127.0.0.1:{free_port()}/v1"
    field(page, "settings-llm-url").fill(closed)
    page.locator("#settings-test-llm").click()
    status = page.locator("#settings-status")
    status.get_by_text("Chat model").wait_for()
    wait_idle(page)
    assert "✗" in status.inner_text() and doclens_app.fake.base_url not in status.inner_text(), status.inner_text()
    field(page, "settings-llm-url").fill(doclens_app.fake.base_url)
    field(page, "settings-llm-model").fill("typed-model")
    page.locator("#settings-test-llm").click()
    status.get_by_text("typed-model").wait_for()
    assert "✓" in status.inner_text(), status.inner_text()
    assert doclens_app.fake.last_chat().body["model"] == "typed-model"


def test_the_embedding_fields_say_what_is_set_and_lock_together(doclens_app: RunningApp, page) -> None:
    """Issue 26 item 13: "API key: set" for a local model with no key of its own (the LLM's key was
    counted); the "New API key" box editable while Provider and Model are locked; the provider's name cut."""
    open_settings(page, doclens_app.url)
    status = field(page, "settings-embedding-key-status").input_value()
    assert status != "set" and "local" in status, status
    assert field(page, "settings-embedding-provider").is_disabled(), "a session user cannot change the embedding"
    assert field(page, "settings-embedding-key").is_disabled(), "...nor its key"
    provider = field(page, "settings-embedding-provider")
    assert provider.input_value() == "sentence_transformers"
    for width in (1400, 1024, 768, 600, 390):  # cut between about 1100 and 560 px
        page.set_viewport_size({"width": width, "height": 800})
        page.wait_for_timeout(300)
        shown, needed = provider.evaluate("(e) => [e.clientWidth, e.scrollWidth]")
        assert needed <= shown, f"at {width} px the provider's name is cut: {needed} px of text in {shown} px"
