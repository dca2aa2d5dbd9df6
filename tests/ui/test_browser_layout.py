"""The page's layout in a real browser (Debian chromium + Playwright), at 1400 px and 390 px wide: a width
that does not jump between loads, and nothing drawn over something else (issue 26 item 10). Outside CI
skipped when /usr/bin/chromium is missing.
"""

from __future__ import annotations

import pytest

from tests.ui import browser_support as ui
from tests.ui.conftest import FIGURE_PDF, RunningApp, open_browsers

pytestmark = pytest.mark.slow
ui.skip_without_chromium()

KB = "layout-walk"
WIDE, NARROW = 1400, 390

RECTS_JS = """(selector) => Array.from(document.querySelectorAll(selector)).map((n) => {
  const r = n.getBoundingClientRect(); return {left: r.left, top: r.top, right: r.right, bottom: r.bottom};
}).filter((r) => r.right > r.left && r.bottom > r.top)"""


@pytest.fixture(scope="module")
def browsers(tmp_path_factory):
    with open_browsers(tmp_path_factory.mktemp("layout-profiles")) as opener:
        yield opener


@pytest.fixture(scope="module")
def conversation(doclens_app: RunningApp, browsers):
    """A page on a knowledge base of the chart sample, with a few questions asked: enough messages to scroll."""
    page = browsers()
    ui.new_kb_with(page, doclens_app.url, KB, FIGURE_PDF)
    page.goto(doclens_app.url)
    page.locator("#chatbot").wait_for()
    ui.wait_idle(page)
    if page.locator("#kb-select input").input_value() != KB:
        ui.choose(page, "kb-select", KB)
    for question in ("What does the chart show?", "Which region grew most?", "What is the CAGR?"):
        ui.ask(page, question)
    page.locator("#figure-gallery .thumbnail-item").first.wait_for(timeout=ui.INGEST_TIMEOUT_MS)
    return page


def rects(page, selector: str) -> list[dict]:
    return page.evaluate(RECTS_JS, selector)


def one_rect(page, selector: str) -> dict:
    found = rects(page, selector)
    assert found, f"{selector} is not on the page"
    return found[0]


def intersect(a: dict, b: dict) -> bool:
    return (
        a["left"] < b["right"] - 1
        and b["left"] < a["right"] - 1
        and a["top"] < b["bottom"] - 1
        and b["top"] < a["bottom"] - 1
    )


def clipped(box: dict, frame: dict) -> dict:
    """The part of ``box`` its scrolling ``frame`` shows (a message scrolled out of view is not covered)."""
    return {
        "left": max(box["left"], frame["left"]),
        "top": max(box["top"], frame["top"]),
        "right": min(box["right"], frame["right"]),
        "bottom": min(box["bottom"], frame["bottom"]),
    }


def clashes(page, over: str, under: str, frame: str = "") -> list[tuple[dict, dict]]:
    shown = rects(page, under)
    if frame:
        shown = [clipped(box, one_rect(page, frame)) for box in shown]
    return [(a, b) for a in rects(page, over) for b in shown if intersect(a, b)]


def opened(browsers, url: str, width: int):
    """A new page of the app, at ``width``, its load done."""
    page = browsers()
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(url)
    page.locator("#chatbot").wait_for()
    ui.wait_idle(page)
    return page


def container_width(page) -> int:
    box = one_rect(page, ".gradio-container")
    return round(box["right"] - box["left"])


def test_the_page_keeps_its_width_across_reloads_and_tabs(conversation, doclens_app: RunningApp, browsers) -> None:
    """It measured 1336, 848 and 650 px after reloads: the container shrank to whatever the tab held."""
    page = browsers()
    page.set_viewport_size({"width": WIDE, "height": 900})
    widths = {}
    for load in range(2):
        page.goto(doclens_app.url)
        page.locator("#chatbot").wait_for()
        ui.wait_idle(page)
        for tab in ("Settings", "Knowledge base", "Chat"):
            ui.open_tab(page, tab)
            page.wait_for_timeout(500)
            widths[f"{tab} (load {load + 1})"] = container_width(page)
    assert set(widths.values()) == {WIDE}, widths
    ui.open_tab(page, "Knowledge base")
    create, name = one_rect(page, "#kb-create"), one_rect(page, "#kb-new-name")
    assert create["top"] < name["bottom"] and name["top"] < create["bottom"], "Create wrapped onto its own row"


@pytest.mark.parametrize("width", [WIDE, NARROW])
def test_labels_and_corner_buttons_cover_no_message_or_thumbnail(conversation, width: int) -> None:
    """The labels "Conversation" and "Figures" floated over scrolled messages and the first thumbnail; the
    chat's trash icon sat on the question bubble, the gallery's "Download All" on the third thumbnail."""
    page = conversation  # resized, not reloaded: a reload starts a new conversation
    page.set_viewport_size({"width": width, "height": 900})
    page.wait_for_timeout(500)
    page.locator("#chatbot .bubble-wrap").evaluate("(n) => { n.scrollTop = 60; }")
    page.wait_for_timeout(300)
    assert not clashes(page, "#chatbot label.float", "#chatbot .bubble-wrap")
    assert not clashes(page, "#chatbot .icon-button-wrapper.top-panel", "#chatbot .message", "#chatbot .bubble-wrap")
    assert not clashes(page, "#figure-gallery label.float", "#figure-gallery .thumbnail-item, #figure-gallery img")
    assert not clashes(page, "#figure-gallery .icon-button-wrapper.top-panel", "#figure-gallery .thumbnail-item")


def test_a_phone_width_window_shows_the_title_and_whole_choices(doclens_app: RunningApp, browsers) -> None:
    """At 390 px the language pill covered "DocLens" and the arrow covered "all documents"."""
    page = opened(browsers, doclens_app.url, NARROW)
    assert not clashes(page, "#language-switch", ".dl-title")
    for picker in ("#kb-select", "#doc-filter"):
        text_end = page.locator(f"{picker} input").evaluate(
            "(n) => n.getBoundingClientRect().right - parseFloat(getComputedStyle(n).paddingRight)"
        )
        arrow = one_rect(page, f"{picker} .icon-wrap")
        assert text_end <= arrow["left"] + 1, (picker, text_end, arrow)
    assert page.evaluate("document.documentElement.scrollWidth") <= NARROW, "the page scrolls sideways"


SPILLING_BUTTONS_JS = """() => Array.from(document.querySelectorAll('button'))
  .filter((b) => b.offsetParent !== null && b.clientWidth > 0 && !b.closest('.dl-offscreen'))
  .filter((b) => b.scrollWidth > b.clientWidth + 8).map((b) => b.id || b.innerText.trim())"""


@pytest.mark.parametrize("width", [WIDE, NARROW])
def test_every_button_holds_its_label(doclens_app: RunningApp, browsers, width: int) -> None:
    """The English "Export conversation (Markdown)" spilled out of its 160 px button on both sides, as loose text."""
    page = opened(browsers, doclens_app.url, width)
    for tab in ("Chat", "Knowledge base", "Settings"):
        ui.open_tab(page, tab)
        page.wait_for_timeout(300)
        assert page.evaluate(SPILLING_BUTTONS_JS) == [], tab


LONG_NAME = "1405.5486v6 - A variant of the Bombieri-Vinogradov theorem in short intervals with application.pdf"
HEADINGS_JS = """() => Array.from(document.querySelectorAll('#docs-table th .header'))
  .filter((n) => n.getBoundingClientRect().height > 0).map((n) => ({
  name: n.innerText.trim(), height: Math.round(n.getBoundingClientRect().height),
  right: n.closest('th').getBoundingClientRect().right}))"""


def test_the_documents_table_keeps_its_headings_whole_beside_a_long_name(
    doclens_app: RunningApp, browsers, tmp_path
) -> None:
    """Beside an arXiv paper's long file name the number headings broke inside the word ("pag es", "fi gu
    res"), and an upload's status ("being indexed · embedding 40/96") was pushed out of sight."""
    paper = tmp_path / LONG_NAME
    paper.write_bytes(FIGURE_PDF.read_bytes())
    page = browsers()
    page.set_viewport_size({"width": WIDE, "height": 900})
    ui.new_kb_with(page, doclens_app.url, "long names", paper)
    page.wait_for_function("() => (document.querySelector('#docs-table')?.innerText || '').includes('Bombieri')")
    page.wait_for_timeout(500)
    page.locator("#docs-table").screenshot(path=str(ui.ARTIFACTS / "documents-long-name.png"))
    headings = page.evaluate(HEADINGS_JS)
    assert [h["name"] for h in headings][-1] == "status", headings
    assert len({h["height"] for h in headings}) == 1, f"a heading broke onto two lines: {headings}"
    table = one_rect(page, "#docs-table")
    assert headings[-1]["right"] <= table["right"] + 1, f"the status column is out of sight: {headings}, {table}"
