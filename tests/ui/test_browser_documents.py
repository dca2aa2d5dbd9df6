"""The documents table at 10,000 documents, and search without a model, in a real browser (Debian chromium +
Playwright) on an app of their own with no model configured (issue 26 items 19-20, issue 28 item 4). The
10,000 documents are registered straight into the knowledge base's registry (nothing is ingested); one of
them has its original stored, as an upload keeps it. The first paint of the table is printed (a figure
for docs/benchmarks.md, not a timed assertion). Outside CI skipped when /usr/bin/chromium is missing.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import time
from pathlib import Path
from typing import Iterator

import pytest

from backend.knowledge_bases.registry import Registry
from backend.quality.bench_page import registered_documents
from backend.types import DocumentInfo
from tests.ui.browser_support import (
    ANSWER_TIMEOUT_MS,
    DOC_ROWS,
    choose,
    dropdown_options,
    field,
    new_kb_with,
    open_tab,
    picked_tokens,
    skip_without_chromium,
    type_text,
    wait_idle,
)
from tests.ui.conftest import ARTIFACTS, SAMPLE_PDF, RunningApp, running_app
from tests.ui.web_support import Web
from ui.common import PICKER_CHOICES

pytestmark = pytest.mark.slow
skip_without_chromium()

LIBRARY = "10k library"  # sorts first: the page opens on it
DOCUMENTS = 10_000
KEPT = 4321  # the document whose original is stored
LOAD_EVENTS = 6  # server steps of a page load (23 before they were merged, 8 before the file pickers kept their picks)
NO_MODEL = {
    "DOCLENS_LLM_BASE_URL": "",
    "DOCLENS_LLM_MODEL": "",
    "DOCLENS_LLM_VISION_MODEL": "",
    "DOCLENS_LLM_API_KEY": "",
    "OPENAI_BASE_URL": "",
    "OPENAI_API_KEY": "",
}


def paper(i: int) -> str:
    return f"paper_{i:05d}.pdf" if i % 10 else f"survey {i:05d}.pdf"


def library_rows() -> list[DocumentInfo]:
    return registered_documents(DOCUMENTS, paper)


@pytest.fixture(scope="module")
def library_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningApp]:
    """An app without a model, with a knowledge base of 10,000 registered documents."""
    data_dir = tmp_path_factory.mktemp("documents-data")
    with running_app(data_dir, "documents-app.log", **NO_MODEL) as app:
        collection = Web(app.url).call("create_kb", LIBRARY)[1]["collection"]
        folder = data_dir / "kbs" / collection
        Registry(folder).add_documents(library_rows())
        (folder / "files").mkdir(exist_ok=True)
        shutil.copyfile(SAMPLE_PDF, folder / "files" / f"{KEPT:032x}.pdf")
        model_ready(app)
        yield app


def model_ready(app: RunningApp, timeout: float = 600) -> None:
    """The table needs no model, but loading one slows the whole server: measure after it."""
    deadline = time.monotonic() + timeout
    while "embedding model ready after" not in app.log_path.read_text(encoding="utf-8", errors="replace"):
        assert time.monotonic() < deadline, "the embedding model did not get ready"
        time.sleep(1)


def cell(page, row: int, column: int):
    """Row ``row``'s ``column``-th cell (both from 1)."""
    return page.locator(DOC_ROWS).nth(row - 1).locator("[role=gridcell]").nth(column - 1)


def table_text(page) -> str:
    return page.locator("#docs-table").inner_text()


def wait_for_table(page, *names: str, gone: str = "") -> None:
    page.wait_for_function(
        "([names, gone]) => { const t = document.querySelector('#docs-table')?.innerText || '';"
        " return names.every((n) => t.includes(n)) && (!gone || !t.includes(gone)); }",
        arg=[list(names), gone],
        timeout=ANSWER_TIMEOUT_MS,
    )


# The frame that first draws the table's rows (a check from the test itself waits while the page runs on).
FIRST_ROWS_JS = """
new MutationObserver((_, observer) => {
  if (!(document.querySelector('#docs-table')?.innerText || '').includes('paper_00001.pdf')) return;
  observer.disconnect();
  requestAnimationFrame(() => { window.firstRowsPainted = performance.now(); });
}).observe(document, { subtree: true, childList: true, characterData: true });
"""


def timed(action, *wait_args, **wait_kwargs) -> float:
    started = time.perf_counter()
    action()
    wait_for_table(*wait_args, **wait_kwargs)
    return (time.perf_counter() - started) * 1000


def test_the_documents_table_pages_filters_and_sorts_10000_documents(library_app: RunningApp, page) -> None:
    page.add_init_script(FIRST_ROWS_JS)
    page.goto(library_app.url)
    open_tab(page, "Knowledge base")
    wait_for_table(page, "paper_00001.pdf", "1–20 of 10,000")
    first_paint = page.evaluate("window.firstRowsPainted")
    assert page.locator(DOC_ROWS).count() <= 20, "one page of rows, never the library"
    wait_idle(page)
    next_ms = timed(lambda: page.locator("#docs-next").click(), page, "21–40 of 10,000")
    filter_ms = timed(
        lambda: type_text(page, "docs-filter", "SURVEY 0"), page, "survey 00000.pdf", "1–20 of 1,000", gone="paper_"
    )
    page.locator("#docs-next").click()
    wait_for_table(page, "21–40 of 1,000", "survey 00200.pdf")
    expected = sorted(((i * 37) % 997 for i in range(0, DOCUMENTS, 10)), reverse=True)[:3]
    choose(page, "docs-sort", "chunks")
    page.locator("#docs-descending input").check()
    page.wait_for_function(
        "([rows, top]) => document.querySelector(rows)?.querySelectorAll('[role=gridcell]')[2]?.innerText.trim() === top",
        arg=[DOC_ROWS, str(expected[0])],
        timeout=30_000,
    )
    chunks = [int(cell(page, n, 3).inner_text()) for n in (1, 2, 3)]
    assert chunks == expected, "sorted on the server across the whole filtered list"
    assert "1–20 of 1,000" in table_text(page), "a new order starts on the first page"
    sort_ms = timed(lambda: choose(page, "docs-sort", "date added"), page, "survey 09990.pdf")
    type_text(page, "docs-filter", "zzz no such paper")
    wait_for_table(page, "no name matches the filter")
    page.screenshot(path=str(ARTIFACTS / "documents-10k.png"), full_page=True)
    print(
        f"\ndocuments table at {DOCUMENTS:,} documents: first paint {first_paint:.0f} ms after navigation;"
        f" next page {next_ms:.0f} ms, filter {filter_ms:.0f} ms, sort {sort_ms:.0f} ms"
    )


def test_a_page_load_asks_the_server_a_few_times(library_app: RunningApp, page) -> None:
    """Gradio 6.31's page passes over every component it has drawn for each status change of each event
    (twice an event at least): on this library the table's first paint waited 1.2 s in that alone. The load
    asks for both tabs' lists in one step; no-op steps run in the browser."""
    asked: list[str] = []
    page.on("request", lambda request: asked.extend(server_events(request)))
    page.goto(library_app.url)
    wait_idle(page)
    page.wait_for_timeout(1500)
    wait_idle(page)
    loading = len(asked)
    open_tab(page, "Knowledge base")
    wait_for_table(page, "paper_00001.pdf")
    wait_idle(page)
    kb_tab = len(asked) - loading
    open_tab(page, "Chat")
    page.wait_for_timeout(500)
    wait_idle(page)
    chat_tab = len(asked) - loading - kb_tab
    print(f"\npage load: {loading} server steps; KB tab shown: {kb_tab}; Chat tab shown: {chat_tab}")
    assert loading <= LOAD_EVENTS, f"{loading} server steps on a page load"
    assert kb_tab <= 1, "showing the KB tab: its lists and its upload's progress, one step"
    assert chat_tab <= 3, "showing the Chat tab: its pickers with the empty state, the figures, the summary"


def server_events(request) -> list[str]:
    """The Gradio event a request runs on the server (none for any other request)."""
    if request.method != "POST" or "gradio_api" not in request.url:
        return []
    with contextlib.suppress(ValueError, AttributeError):
        if "fn_index" in json.loads(request.post_data or "{}"):
            return [request.url]
    return []


def test_the_document_pickers_offer_what_is_typed_not_the_whole_library(library_app: RunningApp, page) -> None:
    """Both file pickers (Chat's document filter, the KB tab's file to delete) hold one screenful of names,
    and typing asks the server for the names that match: 10,000 names in a picker kept the page from drawing
    for seconds (issue 28 item 4)."""
    page.goto(library_app.url)
    wait_idle(page)
    offered = dropdown_options(page, "doc-filter")
    assert "paper_00001.pdf" in offered and len(offered) <= PICKER_CHOICES, len(offered)
    for tab, picker, typed, wanted in (
        (None, "doc-filter", "SURVEY 0999", "survey 09990.pdf"),
        ("Knowledge base", "doc-delete-pick", "survey 0998", "survey 09980.pdf"),
    ):
        if tab:
            open_tab(page, tab)
            wait_idle(page)
        pick_by_typing(page, picker, typed, wanted)
        page.keyboard.press("ArrowDown")  # the one match, picked from the keyboard as it was typed
        page.keyboard.press("Enter")
        page.wait_for_function(  # the Chat tab's picker shows a pick as a token, the KB tab's in its box
            "([id, wanted]) => document.querySelector(`#${id} input`).value === wanted"
            " || [...document.querySelectorAll(`#${id} .token`)].some((t) => t.innerText.includes(wanted))",
            arg=[picker, wanted],
        )
    page.locator("#doc-delete").click()
    confirmation = page.locator("#doc-delete-confirmation")
    confirmation.wait_for(timeout=30_000)
    assert "survey 09980.pdf" in confirmation.inner_text(), "the typed pick is the one to delete"
    page.locator("#doc-delete-confirmation-no").click()


@pytest.mark.parametrize("tab, picker", [(None, "doc-filter"), ("Knowledge base", "doc-delete-pick")])
def test_a_key_answered_late_does_not_bring_back_an_earlier_prefixs_names(
    library_app: RunningApp, page, tab: str | None, picker: str
) -> None:
    """Typing "survey 0998" with the answer to "survey 099" held back (as a loaded server delays one): the
    list goes from a hundred names to one. Gradio 6.31's single-select picker then kept drawing names of the
    hundred below the one match (this test's KB case failed so, and the typing test beside it failed in CI
    three tries running); the pickers are multiselects, and an answer arriving late changes nothing."""
    page.goto(library_app.url)
    wait_idle(page)
    if tab:
        open_tab(page, tab)
        wait_idle(page)
    held: list = []

    def hold_the_shorter_prefix(route) -> None:
        if not held and '"input_value": "survey 099"' in json.dumps(json.loads(route.request.post_data or "{}")):
            held.append(route)
        else:
            route.continue_()

    page.route("**/run/predict", hold_the_shorter_prefix)
    field(page, picker).click()
    page.keyboard.type("survey 0998", delay=30)
    page.wait_for_function(OFFERED_ALONE, arg="survey 09980.pdf", timeout=30_000)
    assert held, "the request of the shorter prefix was held"
    assert float(json.loads(held[0].request.post_data)["data"][-1]) > 0, "each key carries the browser's stamp"
    with page.expect_response(lambda response: response.request.post_data == held[0].request.post_data):
        held[0].continue_()
    page.wait_for_timeout(500)  # the page applies what the late answer says
    offered = page.evaluate("() => [...document.querySelectorAll('[role=option]')].map((o) => o.innerText.trim())")
    assert offered == ["survey 09980.pdf"], offered[:5]


OFFERED_ALONE = (
    "(wanted) => [...document.querySelectorAll('[role=option]')].map((o) => o.innerText.trim()).join() === wanted"
)


def pick_by_typing(page, picker: str, typed: str, wanted: str) -> None:
    """Type into a picker until its list is the server's one match, and every key's answer is in: one
    landing after the arrow key would reset the option it reached. Typed again when a refresh the tab
    started before (its file list) lands after the typing and puts the first names back."""
    with requests_in_flight(page, "/run/predict") as in_flight:
        for _ in range(3):
            field(page, picker).click()
            page.keyboard.press("Control+a")  # over what the picker shows
            page.keyboard.type(typed, delay=30)
            try:
                page.wait_for_function(OFFERED_ALONE, arg=wanted, timeout=10_000)
                wait_until(page, lambda: not in_flight)
                page.wait_for_function(OFFERED_ALONE, arg=wanted, timeout=10_000)
                return
            except Exception:
                offered = page.evaluate("() => [...document.querySelectorAll('[role=option]')].map((o) => o.innerText)")
                print(f"{picker}: typed {typed!r}, offered {offered[:5]}")
                page.keyboard.press("Escape")
    raise AssertionError(f"{picker}: typing {typed!r} never offered {wanted!r} alone")


@contextlib.contextmanager
def requests_in_flight(page, path: str) -> Iterator[set]:
    """The page's requests to ``path`` sent and not yet answered, kept up to date while in the block."""
    pending: set = set()

    def sent(request) -> None:
        if path in request.url:
            pending.add(request)

    def done(request) -> None:
        pending.discard(request)

    handlers = {"request": sent, "requestfinished": done, "requestfailed": done}
    for event, handler in handlers.items():
        page.on(event, handler)
    try:
        yield pending
    finally:
        for event, handler in handlers.items():
            page.remove_listener(event, handler)


def wait_until(page, condition, timeout_ms: int = 30_000) -> None:
    """Poll a Python-side ``condition`` (Playwright delivers page events while it waits)."""
    for _ in range(timeout_ms // 100):
        if condition():
            return
        page.wait_for_timeout(100)
    raise AssertionError(f"still waiting after {timeout_ms} ms")


def test_a_row_offers_its_stored_original_for_download(library_app: RunningApp, page) -> None:
    page.goto(library_app.url)
    open_tab(page, "Knowledge base")
    wait_for_table(page, "paper_00001.pdf")
    type_text(page, "docs-filter", paper(KEPT))
    wait_for_table(page, "1–1 of 1")
    cell(page, 1, 1).click()
    download = page.locator("#doc-download")
    download.get_by_text(f"Download {paper(KEPT)}").wait_for()
    assert picked_tokens(page, "doc-delete-pick") == [paper(KEPT)], "the row is also the one to delete"
    with page.expect_download() as info:
        download.click()
    saved = Path(info.value.path())
    assert info.value.suggested_filename == paper(KEPT)
    assert saved.read_bytes() == SAMPLE_PDF.read_bytes()
    type_text(page, "docs-filter", paper(KEPT + 1))
    wait_for_table(page, paper(KEPT + 1), gone=paper(KEPT))
    cell(page, 1, 1).click()
    download.get_by_text("no original kept").wait_for()


def test_search_without_a_model_opens_the_framed_page(library_app: RunningApp, page) -> None:
    """Item 19: the ranked passages with page and score, each opening the page with the passage framed,
    the search's confidence in the panel, and no model anywhere (none is configured)."""
    new_kb_with(page, library_app.url, "a physics", SAMPLE_PDF)
    open_tab(page, "Chat")
    choose(page, "kb-select", "a physics")
    wait_idle(page)
    field(page, "question").fill("energy formula")
    page.locator("#search").click()
    result = page.locator("#chatbot .message-row.bot-row, #chatbot .bot").last
    result.get_by_text("relevance").first.wait_for(timeout=ANSWER_TIMEOUT_MS)
    text = result.inner_text()
    assert SAMPLE_PDF.name in text and re.search(r"· p\d+", text), text
    page.wait_for_function(
        "(name) => document.querySelector('#sources tbody tr')?.innerText.includes(name)",
        arg=SAMPLE_PDF.name,
        timeout=ANSWER_TIMEOUT_MS,
    )
    shown = re.search(r"confidence (\d+)%", text)
    assert shown, text
    panel = page.locator("#confidence .dl-conf-value")
    assert panel.inner_text() == f"{shown.group(1)}%", "the panel shows the search's own confidence"
    result.locator(".dl-cite").first.click()
    image = page.locator("#page-preview img")
    image.wait_for(timeout=ANSWER_TIMEOUT_MS)
    assert "[1]" in page.locator("#page-preview").inner_text()
    page.screenshot(path=str(ARTIFACTS / "search-without-model.png"), full_page=True)
    assert not library_app.fake.requests, "no model was asked"
