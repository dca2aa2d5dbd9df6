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


def test_two_documents_picked_in_the_chat_are_the_only_sources(doclens_app: RunningApp, browser_page, tmp_path) -> None:
    """Issue 27 item 1: inside a knowledge base, all documents, one, or several picked: the Chat tab's
    document picker takes several, and the answer's sources come from those only."""
    from gradio_client import Client, handle_file

    from tests.support.text_pdf import write_text_pdf

    client, kb = Client(doclens_app.url, verbose=False), "browser-picked-docs"
    client.predict(kb, api_name="/create_kb")
    pdfs = [
        write_text_pdf(tmp_path / name, [[sentence]])
        for name, sentence in (
            ("lighthouse.pdf", "The Verity lighthouse was first lit in 1871 by Ada Quill."),
            ("observatory.pdf", "The Sable observatory stands at a height of 3120 metres."),
            ("ferries.pdf", "The Verity ferry crosses to the Sable islands twice a day since 1871."),
        )
    ]
    uploaded = client.predict(kb, [handle_file(str(p)) for p in pdfs], api_name="/upload")
    assert [r["status"] for r in uploaded] == ["indexed"] * 3
    page = browser_page
    chat_on(page, doclens_app.url, kb)
    for name in ("lighthouse.pdf", "observatory.pdf"):
        ui.choose(page, "doc-filter", name)
    page.keyboard.press("Escape")
    ui.wait_idle(page)
    ui.ask(page, "When was the Verity lit and how high is the Sable observatory, and the ferry?")
    cells = " | ".join(ui.source_rows(page, ".pdf").all_inner_texts())
    assert "lighthouse.pdf" in cells and "observatory.pdf" in cells and "ferries.pdf" not in cells, cells
