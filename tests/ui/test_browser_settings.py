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
