"""The whole user journey in a real browser (Debian chromium + Playwright), one screenshot per step.

Screenshots go to test-artifacts/ui/ (kept by CI). Outside CI the test is skipped when /usr/bin/chromium
is missing; in CI it must run.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Iterator

import pytest

from tests.support.fake_openai import images_in
from tests.ui.conftest import ARTIFACTS, SAMPLE_PDF, RunningApp, running_app

pytestmark = pytest.mark.slow

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
KB = "browser-test"
INGEST_TIMEOUT_MS = 240_000
ANSWER_TIMEOUT_MS = 90_000

if not CHROMIUM.exists() and not os.environ.get("CI"):
    pytest.skip("/usr/bin/chromium is missing (apt-get install chromium); required in CI", allow_module_level=True)


@pytest.fixture
def page(doclens_app: RunningApp, browser_page) -> Iterator:
    """A fresh browser on the shared app."""
    yield browser_page


@pytest.fixture
def browsers(tmp_path: Path) -> Iterator:
    """Opens fresh browsers, each with its own profile (its own local storage: another browser, not another
    tab); all are closed at the end."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        contexts = []

        def open_page():
            context = playwright.chromium.launch_persistent_context(
                str(tmp_path / f"profile-{len(contexts)}"),
                executable_path=str(CHROMIUM),
                headless=True,
                args=CHROMIUM_ARGS,
                viewport={"width": 1280, "height": 800},
            )
            context.set_default_timeout(30_000)
            contexts.append(context)
            return context.new_page()

        try:
            yield open_page
        finally:
            for context in contexts:
                context.close()


@pytest.fixture
def browser_page(browsers) -> Iterator:
    yield browsers()


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
    wait_idle(page)


def wait_idle(page, timeout_ms: int = ANSWER_TIMEOUT_MS) -> None:
    """Wait until no Gradio event shows a pending status (the answer stream and the side panel are done)."""
    page.wait_for_function("() => !document.querySelector('.wrap.generating, .pending, .eta-bar')", timeout=timeout_ms)
    page.wait_for_timeout(300)


def choose(page, elem_id: str, value: str) -> None:
    """Pick an option of a Gradio dropdown as a user does."""
    field(page, elem_id).click()
    page.get_by_role("option", name=value, exact=True).click()
    page.wait_for_timeout(300)


def dropdown_options(page, elem_id: str) -> list[str]:
    field(page, elem_id).click()
    options = page.get_by_role("option")
    options.first.wait_for()
    names = [options.nth(i).inner_text().strip().split("\n")[-1].strip() for i in range(options.count())]
    field(page, elem_id).evaluate("(e) => e.blur()")
    options.first.wait_for(state="detached")
    return names


def test_user_journey(doclens_app: RunningApp, page) -> None:
    steps = Steps(page)
    fake = doclens_app.fake
    page.goto(doclens_app.url)
    page.locator("#chatbot").wait_for()
    steps.shot("home")

    # -- create a knowledge base
    open_tab(page, "Knowledge base")
    field(page, "kb-new-name").fill(KB)
    page.locator("#kb-create").click()
    page.locator("#kb-status").get_by_text("Created").wait_for(timeout=INGEST_TIMEOUT_MS)
    assert field(page, "kb-active").input_value() == KB
    steps.shot("kb-created")

    # -- upload a PDF and watch the progress finish
    page.locator("#upload-files input[type=file]").set_input_files(str(SAMPLE_PDF))
    page.locator("#upload-files").get_by_text(SAMPLE_PDF.name).first.wait_for()
    page.locator("#upload-start").click()
    page.locator("#ingest-status .dl-progress").first.wait_for(timeout=30_000)
    steps.shot("upload-progress")
    page.locator("#ingest-status").get_by_text("indexed").wait_for(timeout=INGEST_TIMEOUT_MS)
    page.wait_for_function(
        "(name) => document.querySelector('#docs-table')?.innerText.includes(name)", arg=SAMPLE_PDF.name
    )
    steps.shot("uploaded", full_page=True)

    # -- deleting a file needs a choice and a confirmation that names it (nothing is pre-selected)
    assert field(page, "doc-delete-pick").input_value() == ""
    page.locator("#doc-delete").click()
    page.locator("#doc-delete-confirmation").wait_for(state="hidden")
    choose(page, "doc-delete-pick", SAMPLE_PDF.name)
    page.locator("#doc-delete").click()
    page.locator("#doc-delete-confirmation").get_by_text(SAMPLE_PDF.name).wait_for()
    steps.shot("file-delete-confirm", show="#doc-delete-confirmation")
    page.locator("#doc-delete-confirmation-no").click()
    page.locator("#doc-delete-confirmation").wait_for(state="hidden")
    assert SAMPLE_PDF.name in page.locator("#docs-table").inner_text(), "Keep it keeps the file"

    # -- the self-test reports its metrics
    page.locator("#quality").get_by_text("Quality checks").click()
    page.locator("#selftest-run").click()
    page.locator("#quality-report table").wait_for(timeout=ANSWER_TIMEOUT_MS)
    steps.shot("selftest", show="#quality-report")

    # -- ask: streamed answer with KaTeX formulas and sources with pages
    open_tab(page, "Chat")
    page.wait_for_function(f"() => document.querySelector('#kb-select input')?.value === '{KB}'")
    wait_idle(page)
    ask(page, "What is the key formula in the document?")
    answer = page.locator("#chatbot .message-row.bot-row, #chatbot .bot").first
    answer.locator(".katex").first.wait_for()
    assert "It costs $5 and $10." in answer.inner_text()  # prices are not math...
    assert answer.locator(".katex").count() >= 4  # ...but $$, $, \( and \[ all are
    rows = page.locator("#sources tbody tr")
    rows.first.wait_for()
    assert re.search(r"\d+%", rows.first.inner_text())
    assert SAMPLE_PDF.name in rows.first.inner_text()
    assert page.locator("#confidence").get_by_text("%").count() >= 1
    steps.shot("answer")

    # -- a source's page as an image: from the table, and from a [n] citation in the answer
    rows.first.click()
    page.locator("#page-preview img").wait_for()
    steps.shot("page-preview", show="#page-preview")
    page.locator("#page-preview").wait_for()
    page.evaluate("() => { const p = document.querySelector('#page-preview'); p.dataset.seen = 'table'; }")
    ask(page, "$5 and $10 是多少钱？")
    user = page.locator("#chatbot .message-row.user-row, #chatbot .user").last
    assert "$5 and $10 是多少钱？" in user.inner_text(), "the user's own text is not math"
    assert user.locator(".katex").count() == 0
    page.locator("#page-preview").wait_for(state="hidden")  # a new answer: the old page is stale
    answer = page.locator("#chatbot .message-row.bot-row, #chatbot .bot").last
    answer.locator(".dl-cite").first.click()
    preview = page.locator("#page-preview")
    preview.locator("img").wait_for()
    assert "[1]" in preview.inner_text() and SAMPLE_PDF.name in preview.inner_text()
    steps.shot("citation-preview", show="#page-preview")

    # -- [n] in the older answer asks for that answer's source n, not the newest answer's
    joined: list[str] = []
    page.on("request", lambda request: joined.append(request.post_data or "") if "queue/join" in request.url else None)
    older_cite = page.locator("#chatbot .message-row.bot-row, #chatbot .bot").first.locator(".dl-cite").first
    assert "dl-answer-0" in (older_cite.get_attribute("class") or ""), "the chat keeps the answer's number"
    older_cite.click()
    page.wait_for_function("() => document.querySelector('#page-preview img')")
    wait_idle(page)
    assert any('"0:1"' in body for body in joined), joined

    # -- lock a figure, ask about it: the vision request carries the image
    figures = page.locator("#figure-gallery .thumbnail-item, #figure-gallery button.thumbnail-item")
    figures.first.wait_for(timeout=30_000)
    figures.first.click()
    chip = page.locator("#figure-lock")
    chip.get_by_text(re.compile(r"figure p\d+")).wait_for()
    assert SAMPLE_PDF.name in chip.inner_text(), "the chip names the figure's file"
    chip.locator("img").wait_for()  # and shows its thumbnail
    steps.shot("figure-locked", show="#figure-lock")
    vision_before = len(fake.vision_requests())
    ask(page, "What does this figure show?")
    vision = fake.vision_requests()[vision_before:]
    assert vision, "the figure question should reach the model with the image"
    assert any(mime.startswith("image/") and data for mime, data in images_in(vision[-1]))
    chip.wait_for(state="hidden")  # the lock is for one question
    steps.shot("figure-answer", show="#chatbot")

    # -- lock again and unlock with the ✕
    figures.first.click()
    chip.wait_for()
    page.locator("#figure-unlock").click()
    chip.wait_for(state="hidden")

    # -- switching the knowledge base starts a fresh conversation view
    rows.first.click()
    page.locator("#page-preview img").wait_for()
    figures.first.click()
    chip.wait_for()
    choose(page, "kb-select", "Default")
    page.wait_for_function("() => !document.querySelector('#chatbot .message-row, #chatbot .message')")
    chip.wait_for(state="hidden")
    page.locator("#page-preview").wait_for(state="hidden")
    assert page.locator("#sources tbody tr").count() == 0
    choose(page, "kb-select", KB)
    wait_idle(page)

    # -- a narrow window still works
    page.set_viewport_size({"width": 420, "height": 800})
    page.wait_for_timeout(500)
    steps.shot("narrow", full_page=True)
    page.set_viewport_size({"width": 1280, "height": 800})

    # -- delete the knowledge base through the confirmation
    open_tab(page, "Knowledge base")
    page.locator("#kb-delete").click()
    confirm = page.locator("#kb-delete-confirmation-yes")
    confirm.wait_for()
    steps.shot("delete-confirm")
    confirm.click()
    page.locator("#kb-status").get_by_text("Deleted").wait_for()
    assert field(page, "kb-active").input_value() != KB
    steps.shot("kb-deleted")


SCANNED_PDF = SAMPLE_PDF.parent / "layout" / "scanned_zh_en_20p.pdf"  # OCR on every page: a slow upload


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


def test_delete_confirmation_follows_the_selection(doclens_app: RunningApp, page) -> None:
    """Item 1: the prompt named A, the user then picked B: "Yes, delete" must never delete B."""
    page.goto(doclens_app.url)
    open_tab(page, "Knowledge base")
    create_kb(page, "kb-a")
    create_kb(page, "kb-b")
    choose(page, "kb-active", "kb-a")
    page.locator("#kb-delete").click()
    confirmation = page.locator("#kb-delete-confirmation")
    confirmation.get_by_text("kb-a").wait_for()
    choose(page, "kb-active", "kb-b")
    confirmation.wait_for(state="hidden")  # the prompt about kb-a is gone with the new selection
    assert {"kb-a", "kb-b"} <= set(dropdown_options(page, "kb-active"))
    page.locator("#kb-delete").click()
    confirmation.get_by_text("kb-b").wait_for()
    page.locator("#kb-delete-confirmation-yes").click()
    page.locator("#kb-status").get_by_text("Deleted").wait_for()
    names = dropdown_options(page, "kb-active")
    assert "kb-b" not in names and "kb-a" in names


def test_lists_refresh_and_the_last_kb_is_remembered(doclens_app: RunningApp, page) -> None:
    """Item 6: a KB made in another browser tab shows up when the Chat tab is shown; a reload keeps the
    user's KB instead of falling back to the alphabetically first one."""
    page.goto(doclens_app.url)
    page.locator("#chatbot").wait_for()
    wait_idle(page)
    other = page.context.new_page()
    other.goto(doclens_app.url)
    open_tab(other, "Knowledge base")
    create_kb(other, "zz-made-elsewhere")
    other.close()
    open_tab(page, "Knowledge base")
    open_tab(page, "Chat")
    page.wait_for_function("() => !document.querySelector('#kb-select .pending, #kb-select .generating')")
    page.wait_for_timeout(500)
    assert "zz-made-elsewhere" in dropdown_options(page, "kb-select")
    choose(page, "kb-select", "zz-made-elsewhere")
    wait_idle(page)
    page.reload()
    page.wait_for_function("() => document.querySelector('#kb-select input')?.value === 'zz-made-elsewhere'")
    page.locator("#chat-refresh").click()
    wait_idle(page)
    assert field(page, "kb-select").input_value() == "zz-made-elsewhere"


def test_a_reload_reattaches_to_the_running_upload(doclens_app: RunningApp, page, browsers) -> None:
    """Items 7 and 8: the upload is a server-side job; after a reload its progress and Cancel work, the
    pending row says it is being indexed, and the status ends in the final state. Without a login the
    job is this browser's: another browser is told it runs, and cannot cancel it."""
    page.goto(doclens_app.url)
    open_tab(page, "Knowledge base")
    create_kb(page, "kb-upload")
    page.locator("#upload-cancel").click()
    page.locator("#ingest-status").get_by_text("No upload is running.").wait_for()
    page.locator("#upload-files input[type=file]").set_input_files(str(SCANNED_PDF))
    page.locator("#upload-files").get_by_text(SCANNED_PDF.name).first.wait_for()
    page.locator("#upload-start").click()
    page.locator("#ingest-status .dl-progress").wait_for(timeout=30_000)
    page.reload()
    kb_tab_on(page, "kb-upload")
    status = page.locator("#ingest-status")
    status.locator(".dl-progress").wait_for(timeout=30_000)  # re-attached
    page.wait_for_function(
        "() => document.querySelector('#docs-table')?.innerText.includes('being indexed')", timeout=60_000
    )
    other = browsers()
    other.goto(doclens_app.url)
    kb_tab_on(other, "kb-upload")
    other.locator("#ingest-status").get_by_text("started in another browser").wait_for()
    other.locator("#upload-cancel").click()
    other.locator("#ingest-status").get_by_text("only that browser can cancel it").wait_for()
    other.wait_for_timeout(1500)
    assert status.locator(".dl-progress").count() == 1 and "Cancelling" not in status.inner_text(), (
        "the other browser did not cancel this browser's upload"
    )
    page.locator("#upload-cancel").click()
    status.get_by_text("Cancelling after the current page").wait_for()
    status.get_by_text("Upload cancelled; nothing was stored.").wait_for(timeout=INGEST_TIMEOUT_MS)
    page.locator("#upload-cancel").click()
    status.get_by_text("No upload is running.").wait_for()
    assert SCANNED_PDF.name not in page.locator("#docs-table").inner_text()


BUNDLED_STEPS = (
    "reading the bundled 4-bit weights",
    "writing the full model",
    "packaging it for sentence-transformers",
)


def test_a_first_start_shows_the_model_build_and_keeps_uploads_waiting(browser_page, tmp_path) -> None:
    """Item 9: a fresh data folder and an empty model cache: the banner names the build's step with its
    percentage, a knowledge base is created at once, and an upload started meanwhile is kept (its progress
    says it waits for the model) and ends indexed once the model is ready. float32 keeps the real build
    to the bundled model (~2 minutes); the int8 steps feed the same banner (tests/ui/test_handlers.py)."""
    page = browser_page
    with running_app(
        tmp_path / "fresh",
        "first-start.log",
        DOCLENS_EMBEDDING_CACHE_DIR=str(tmp_path / "empty-cache"),
        DOCLENS_EMBEDDING_DTYPE="float32",
    ) as app:
        page.goto(app.url)
        banner = page.locator("#model-banner")
        banner.get_by_text("Preparing the embedding model").wait_for(timeout=60_000)
        open_tab(page, "Knowledge base")
        field(page, "kb-new-name").fill("early")
        page.locator("#kb-create").click()
        page.locator("#kb-status").get_by_text("Created").wait_for(timeout=30_000)  # not after the build
        assert banner.is_visible(), "the knowledge base was created while the model is still prepared"
        page.locator("#upload-files input[type=file]").set_input_files(str(SAMPLE_PDF))
        page.locator("#upload-files").get_by_text(SAMPLE_PDF.name).first.wait_for()
        page.locator("#upload-start").click()
        status = page.locator("#ingest-status")
        status.get_by_text("indexing starts when the embedding model is ready").wait_for(timeout=60_000)
        # a later step, further along: the fraction comes from the build's own steps
        page.wait_for_function(
            "(step) => { const t = document.querySelector('#model-banner')?.innerText || '';"
            " return t.includes(step) && /[1-9]\\d*%/.test(t); }",
            arg=BUNDLED_STEPS[2],
            timeout=180_000,
        )
        page.screenshot(path=str(ARTIFACTS / "first-start-banner.png"))
        banner.wait_for(state="hidden", timeout=INGEST_TIMEOUT_MS * 3)
        status.get_by_text("indexed").wait_for(timeout=INGEST_TIMEOUT_MS)
        page.wait_for_function(
            "(name) => document.querySelector('#docs-table')?.innerText.includes(name)", arg=SAMPLE_PDF.name
        )
        log_text = app.log_path.read_text(encoding="utf-8")
    assert "embedding model: bundled:package" in log_text and "embedding model ready after" in log_text


SCAN_PASSAGE = (
    "Quarterly rainfall in the valley doubled after the new reservoir opened, and the farmers "
    "planted barley instead of wheat on the eastern terraces."
)


def frame_pixels(png: bytes) -> int:
    """How many pixels of a page preview have the frame's colour (backend/documents/preview.py)."""
    import io

    from PIL import Image

    from backend.documents.preview import FRAME_COLOUR

    image = Image.open(io.BytesIO(png)).convert("RGB")
    return sum(1 for pixel in image.getdata() if max(abs(a - b) for a, b in zip(pixel, FRAME_COLOUR)) < 30)


def test_a_source_on_a_scanned_page_shows_its_passage_framed(doclens_app: RunningApp, page, tmp_path) -> None:
    """Item 19: a scan has no text layer; clicking its source shows the page with the passage framed
    (found through OCR of the page)."""
    from tests.support.text_pdf import write_scanned_pdf

    scan = write_scanned_pdf(
        tmp_path / "harbour-scan.pdf",
        [
            [
                "Harbour tides were measured every morning by the keeper of the northern lighthouse.",
                SCAN_PASSAGE,
                "Closing remarks about the weather station and its brass instruments.",
            ]
        ],
    )
    page.goto(doclens_app.url)
    open_tab(page, "Knowledge base")
    create_kb(page, "kb-scan")
    page.locator("#upload-files input[type=file]").set_input_files(str(scan))
    page.locator("#upload-files").get_by_text(scan.name).first.wait_for()
    page.locator("#upload-start").click()
    page.locator("#ingest-status").get_by_text("indexed").wait_for(timeout=INGEST_TIMEOUT_MS)
    open_tab(page, "Chat")
    choose(page, "kb-select", "kb-scan")
    wait_idle(page)
    ask(page, "How did the rainfall change after the reservoir opened?")
    rows = page.locator("#sources tbody tr")
    rows.first.wait_for()
    assert scan.name in rows.first.inner_text()
    rows.first.click()
    image = page.locator("#page-preview img")
    image.wait_for(timeout=ANSWER_TIMEOUT_MS)  # the first preview of a scanned page runs OCR: seconds
    page.locator("#page-preview").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "scanned-preview.png"))
    png = page.request.get(page.evaluate("(src) => new URL(src, location.href).href", image.get_attribute("src")))
    assert png.ok and frame_pixels(png.body()) > 500, "the cited passage is framed on the scanned page"


def ui_string_pairs() -> list[tuple[str, str]]:
    """Every (English, Chinese) pair the UI code passes to ui.i18n's label()/text(), read from the source."""
    import ast

    pairs = []
    for path in sorted((Path(__file__).resolve().parents[2] / "ui").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or getattr(node.func, "id", None) not in ("label", "text"):
                continue
            strings = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if len(strings) == 2:
                pairs.append((strings[0], strings[1]))
    assert len(pairs) > 100, "the scan should find the app's strings"
    return pairs


def other_language_strings(page_text: str, lang: str) -> list[str]:
    """Strings of the other language that show on a page meant to be in ``lang``."""
    found = []
    for en, zh in ui_string_pairs():
        if "{" in en or en == zh:
            continue  # templates are checked through their filled-in results elsewhere
        match = (
            re.search(rf"(?<![\w-]){re.escape(en)}(?![\w-])", page_text)
            if lang == "zh"
            else re.search(re.escape(zh), page_text)
        )
        if match:  # with the text around it, so a failure says where it is
            found.append(page_text[max(0, match.start() - 40) : match.end() + 20].replace("\n", " | "))
    return found


def whole_page_text(page) -> str:
    """The header and every tab's visible text (each tab is shown in turn; quality checks opened)."""
    texts = []
    for tab in ("tab-chat", "tab-kb", "tab-settings"):
        page.locator(f"#{tab}-button, button[role=tab]").nth(("tab-chat", "tab-kb", "tab-settings").index(tab)).click()
        wait_idle(page)
        if tab == "tab-kb" and page.locator("#quality .label-wrap.open, #quality .open").count() == 0:
            page.locator("#quality").locator("button, .label-wrap").first.click()
            page.wait_for_timeout(300)
        texts.append(page.locator("body").inner_text())
    return "\n".join(texts)


README_SHOTS = ARTIFACTS.parent.parent / "docs" / "screenshots"
SHOTS = ARTIFACTS / "readme"


def screenshot_folders() -> list[Path]:
    """Where the README screenshots go: test-artifacts/ always; docs/screenshots (committed, shown by the
    README) only when DOCLENS_UPDATE_SCREENSHOTS=1, so a test run leaves the working tree as it was."""
    return [SHOTS, README_SHOTS] if os.environ.get("DOCLENS_UPDATE_SCREENSHOTS") == "1" else [SHOTS]


def readme_shots(page, lang: str) -> None:
    """The README screenshots: chat, knowledge base and settings tabs, in each language."""
    folders = screenshot_folders()
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    for index, name in enumerate(("chat", "kb", "settings")):
        page.locator("button[role=tab]").nth(index).click()
        wait_idle(page)
        shot = page.screenshot(path=str(folders[0] / f"{name}-{lang}.png"))
        for folder in folders[1:]:
            (folder / f"{name}-{lang}.png").write_bytes(shot)


def test_readme_screenshots_are_updated_only_when_asked(monkeypatch) -> None:
    """A normal run must not rewrite the committed screenshots; the README's images exist."""
    monkeypatch.delenv("DOCLENS_UPDATE_SCREENSHOTS", raising=False)
    assert screenshot_folders() == [SHOTS]
    monkeypatch.setenv("DOCLENS_UPDATE_SCREENSHOTS", "1")
    assert README_SHOTS in screenshot_folders()
    readme = (README_SHOTS.parent.parent / "README.md").read_text(encoding="utf-8")
    for name in re.findall(r"docs/screenshots/([\w-]+\.png)", readme):
        assert (README_SHOTS / name).is_file(), name


@pytest.fixture
def chinese_page(doclens_app: RunningApp, tmp_path: Path) -> Iterator:
    """A browser whose language is Chinese (navigator.language zh-CN)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile-zh"),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 800},
            locale="zh-CN",
        )
        context.set_default_timeout(30_000)
        try:
            yield context.new_page()
        finally:
            context.close()


def test_one_language_at_a_time(doclens_app: RunningApp, chinese_page) -> None:
    """Item 11: a Chinese browser gets the Chinese UI only; the switch turns it into English only, and
    the choice survives a reload. Messages made on the server follow the language too."""
    page = chinese_page
    committed = {path: path.read_bytes() for path in README_SHOTS.glob("*.png")}
    page.goto(doclens_app.url)
    page.get_by_role("tab", name="知识库").wait_for()
    wait_idle(page)
    open_tab(page, "知识库")
    field(page, "kb-new-name").fill("")
    page.locator("#kb-create").click()  # a server-made error, in Chinese
    page.locator("#kb-status").get_by_text("知识库名称为空").wait_for()
    zh_text = whole_page_text(page)
    assert "问答" in zh_text and "上传并索引" in zh_text
    assert other_language_strings(zh_text, "zh") == []
    readme_shots(page, "zh")

    page.locator("#language-switch").get_by_text("English").click()
    page.get_by_role("tab", name="Knowledge base").wait_for()
    open_tab(page, "Knowledge base")
    page.locator("#kb-create").click()
    page.locator("#kb-status").get_by_text("knowledge base name is empty").wait_for()
    en_text = whole_page_text(page)
    assert "Upload and index" in en_text
    assert other_language_strings(en_text, "en") == []
    readme_shots(page, "en")

    page.reload()
    page.get_by_role("tab", name="Knowledge base").wait_for()  # the choice outlives the page
    assert (SHOTS / "chat-zh.png").is_file() and (SHOTS / "settings-en.png").is_file()
    if README_SHOTS not in screenshot_folders():
        assert {path: path.read_bytes() for path in README_SHOTS.glob("*.png")} == committed, (
            "a test run leaves docs/screenshots alone"
        )
