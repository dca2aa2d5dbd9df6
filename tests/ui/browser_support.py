"""What the browser tests (tests/ui/test_browser_*.py) share: Debian chromium driven by Playwright, the
browsers as fixtures, and the steps a user takes on a Gradio page.

Its fixtures are in tests/ui/conftest.py; a test module calls ``skip_without_chromium()`` first.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from tests.ui.conftest import ARTIFACTS, CHROMIUM

INGEST_TIMEOUT_MS = 240_000
ANSWER_TIMEOUT_MS = 90_000


def skip_without_chromium() -> None:
    """Outside CI a browser test is skipped when /usr/bin/chromium is missing; in CI it must run."""
    if not CHROMIUM.exists() and not os.environ.get("CI"):
        pytest.skip("/usr/bin/chromium is missing (apt-get install chromium); required in CI", allow_module_level=True)


class Steps:
    """Screenshots numbered in the order they are taken."""

    def __init__(self, page) -> None:
        self.page = page
        self.count = 0
        shutil.rmtree(ARTIFACTS / "steps", ignore_errors=True)
        (ARTIFACTS / "steps").mkdir(parents=True)

    def shot(self, name: str, full_page: bool = False, show: str = "") -> None:
        if show:
            self.page.locator(show).first.scroll_into_view_if_needed()
        self.count += 1
        self.page.screenshot(path=str(ARTIFACTS / "steps" / f"{self.count:02d}-{name}.png"), full_page=full_page)


def field(page, elem_id: str):
    return page.locator(f"#{elem_id}").locator("textarea, input").first


def open_tab(page, name: str) -> None:
    page.get_by_role("tab", name=re.compile(name)).click()


def ask(page, question: str) -> None:
    bot_messages = page.locator("#chatbot .message-row.bot-row, #chatbot .bot")
    before = bot_messages.count()
    field(page, "question").fill(question)
    page.locator("#send").click()
    page.wait_for_function(
        "([n]) => document.querySelectorAll('#chatbot .message-row.bot-row, #chatbot .bot').length > n",
        arg=[before],
        timeout=ANSWER_TIMEOUT_MS,
    )
    # A streaming answer may pause longer than wait_idle looks; Stop shows until the answer and its panel end.
    page.wait_for_function(
        "() => !document.querySelector('#stop') || document.querySelector('#stop').offsetParent === null",
        timeout=ANSWER_TIMEOUT_MS,
    )
    wait_idle(page)


def choose_files(page, path: Path) -> None:
    """Choose a file in the upload box and wait until the box lists it. The list shows a name as two spans,
    stem and extension ("harbour-scan" ".pdf"), so its text never equals the name (waiting for that text
    passed only when the box was caught mid-upload, and failed 3 times in about 20 runs): its cell's aria-label
    is the name. If it never shows, the failure carries what the page did meanwhile."""
    seen: list[str] = []
    page.on("console", lambda message: seen.append(f"console {message.type}: {message.text}"))
    page.on("requestfailed", lambda request: seen.append(f"failed {request.method} {request.url} {request.failure}"))
    page.locator("#upload-files input[type=file]").set_input_files(str(path))
    try:
        page.locator(f'#upload-files td.filename[aria-label="{path.name}"]').first.wait_for(timeout=60_000)
    except Exception as exc:
        page.screenshot(path=str(ARTIFACTS / "no-file-chosen.png"), full_page=True)
        raise AssertionError(f"{path.name} not listed in the upload box; the page meanwhile: {seen}") from exc


def source_rows(page, file_name: str):
    """The sources table once its first row names ``file_name``: the table fills after the answer, and an
    empty placeholder row stands there until then."""
    page.wait_for_function(
        "(name) => document.querySelector('#sources tbody tr')?.innerText.includes(name)",
        arg=file_name,
        timeout=ANSWER_TIMEOUT_MS,
    )
    return page.locator("#sources tbody tr")


# Gradio 6.31 draws a table's rows as div grid rows (its <tbody> is a hidden copy for measuring).
DOC_ROWS = "#docs-table [role=row]:has(> [role=gridcell])"

PENDING = ".wrap.generating, .pending, .eta-bar"
# What is pending, by the ids of its ancestors: says which component an endless event is stuck on.
PENDING_DUMP = f"""() => Array.from(document.querySelectorAll('{PENDING}')).map(e => {{
  const ids = []; for (let p = e; p; p = p.parentElement) if (p.id) ids.push(p.id);
  return e.className + ' in ' + ids.join(' < ');
}})"""


def wait_idle(page, timeout_ms: int = ANSWER_TIMEOUT_MS) -> None:
    """Wait until no Gradio event shows a pending status (the answer stream and the side panel are done)."""
    try:
        page.wait_for_function(f"() => !document.querySelector('{PENDING}')", timeout=timeout_ms)
    except Exception as exc:
        raise AssertionError(f"still pending after {timeout_ms} ms: {page.evaluate(PENDING_DUMP)}") from exc
    page.wait_for_timeout(300)


def wait_for_text(page, selector: str, text: str, gone: bool = False, timeout_ms: int = ANSWER_TIMEOUT_MS) -> None:
    """Wait until the element's rendered text holds ``text`` (or, ``gone``, no longer does). A table's
    cells are not found by text: Gradio keeps a hidden copy of each cell for measuring."""
    page.wait_for_function(
        "([selector, text, gone]) => (document.querySelector(selector)?.innerText || '').includes(text) !== gone",
        arg=[selector, text, gone],
        timeout=timeout_ms,
    )


def type_text(page, elem_id: str, text: str) -> None:
    """Replace a textbox's text by typing it, as a user does: Gradio 6.31 sends a textbox's ``input`` event
    on keystrokes, not on Playwright's ``fill``."""
    box = field(page, elem_id)
    box.fill(text[:-1])
    box.press_sequentially(text[-1:])


def choose(page, elem_id: str, value: str) -> None:
    """Pick an option of a Gradio dropdown as a user does."""
    field(page, elem_id).click()
    page.get_by_role("option", name=value, exact=True).click()
    page.wait_for_timeout(300)


def picked_tokens(page, elem_id: str) -> list[str]:
    """What a multiselect dropdown shows as picked (its tokens' text, without the remove mark)."""
    return page.evaluate(
        "(id) => [...document.querySelectorAll(`#${id} .token`)].map((t) => t.innerText.replace('×', '').trim())",
        elem_id,
    )


def dropdown_options(page, elem_id: str) -> list[str]:
    field(page, elem_id).click()
    options = page.get_by_role("option")
    options.first.wait_for()
    names = [options.nth(i).inner_text().strip().split("\n")[-1].strip() for i in range(options.count())]
    field(page, elem_id).evaluate("(e) => e.blur()")
    options.first.wait_for(state="detached")
    return names


def kb_tab_on(page, name: str) -> None:
    open_tab(page, "Knowledge base")
    wait_idle(page)
    if field(page, "kb-active").input_value() != name:
        choose(page, "kb-active", name)
        wait_idle(page)


def create_kb(page, name: str) -> None:
    field(page, "kb-new-name").fill(name)
    page.locator("#kb-create").click()
    page.locator("#kb-status").get_by_text(name).wait_for(timeout=INGEST_TIMEOUT_MS)
    wait_idle(page)


def new_kb_with(page, url: str, name: str, pdf: Path) -> None:
    """Open the app, create knowledge base ``name`` and upload ``pdf`` into it through the page."""
    page.goto(url)
    open_tab(page, "Knowledge base")
    create_kb(page, name)
    choose_files(page, pdf)
    page.locator("#upload-start").click()
    page.locator("#ingest-status").get_by_text("indexed").wait_for(timeout=INGEST_TIMEOUT_MS)
    wait_idle(page)
