"""Asking two knowledge bases at once in the Chat tab (Debian chromium + Playwright): the sources of the
answer name both. Outside CI skipped when /usr/bin/chromium is missing."""

from __future__ import annotations

import pytest

from tests.ui import browser_support as ui
from tests.ui.conftest import RunningApp
from tests.ui.test_api import two_kbs
from tests.ui.test_browser_chat import chat_on

pytestmark = pytest.mark.slow
ui.skip_without_chromium()


def test_two_kbs_chosen_in_the_chat_give_sources_from_both(doclens_app: RunningApp, browser_page, tmp_path) -> None:
    from gradio_client import Client

    harbour, mountain = two_kbs(Client(doclens_app.url, verbose=False), tmp_path, "browser")
    page = browser_page
    chat_on(page, doclens_app.url, harbour)
    ui.choose(page, "kb-also", mountain)
    page.keyboard.press("Escape")
    ui.ask(page, "When was the lighthouse lit and how high is the observatory?")
    rows = ui.source_rows(page, ".pdf")
    cells = " | ".join(rows.all_inner_texts())
    assert f"{harbour}: lighthouse.pdf" in cells and f"{mountain}: observatory.pdf" in cells, cells
    rows.filter(has_text="observatory.pdf").first.click()  # the page of the other knowledge base's source
    page.locator("#page-preview img").wait_for()
    assert "observatory.pdf" in page.locator("#page-preview").inner_text()
