"""One language at a time in a real browser (Debian chromium + Playwright), and the README screenshots in
each language. Outside CI skipped when /usr/bin/chromium is missing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterator

import pytest

from tests.ui.browser_support import field, open_tab, skip_without_chromium, wait_idle
from tests.ui.conftest import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, RunningApp

pytestmark = pytest.mark.slow
skip_without_chromium()


def ui_string_pairs() -> list[tuple[str, str]]:
    """Every (English, Chinese) pair the UI code passes to ui.i18n.strings's label()/text(), read from the source."""
    import ast

    pairs = []
    for path in sorted((Path(__file__).resolve().parents[2] / "ui").rglob("*.py")):
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


DOCUMENT_NAME = re.compile(r"[^\s|/\"“”]+\.pdf", re.IGNORECASE)


def whole_page_text(page) -> str:
    """The header and every tab's visible text (each tab is shown in turn; quality checks opened)."""
    texts = []
    for tab in ("tab-chat", "tab-kb", "tab-settings"):
        page.locator(f"#{tab}-button, button[role=tab]").nth(("tab-chat", "tab-kb", "tab-settings").index(tab)).click()
        wait_idle(page)
        if tab == "tab-kb" and page.locator("#quality .label-wrap.open, #quality .open").count() == 0:
            page.locator("#quality").locator("button, .label-wrap").first.click()
            page.wait_for_timeout(300)
        # What the model wrote (the recording server echoes in English) and the documents' names (a Chinese
        # file name holds 文档) are content, not the UI's words.
        shown = page.locator("body").inner_text().splitlines()
        texts.append("\n".join(DOCUMENT_NAME.sub(" ", line) for line in shown if "Echo:" not in line))
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
    page.locator("#trash").get_by_text("回收站").click()  # open through the switch: its table and its line
    page.locator("#trash-restore").click()
    page.locator("#trash-status").get_by_text("请先在回收站中选择").wait_for()
    zh_text = whole_page_text(page)
    assert "问答" in zh_text and "上传并索引" in zh_text
    assert other_language_strings(zh_text, "zh") == []
    readme_shots(page, "zh")

    page.locator("#language-switch").get_by_text("English").click()
    page.get_by_role("tab", name="Knowledge base").wait_for()
    open_tab(page, "Knowledge base")
    page.locator("#kb-create").click()
    page.locator("#kb-status").get_by_text("knowledge base name is empty").wait_for()
    page.locator("#trash-table").get_by_text("purged after").first.wait_for()  # its headers written again
    en_text = whole_page_text(page)
    assert "Upload and index" in en_text
    assert "Drop File Here" in en_text and "将文件拖放到此处" not in en_text  # Gradio's own strings too
    assert other_language_strings(en_text, "en") == []
    readme_shots(page, "en")

    page.reload()
    page.get_by_role("tab", name="Knowledge base").wait_for()  # the choice outlives the page
    assert (SHOTS / "chat-zh.png").is_file() and (SHOTS / "settings-en.png").is_file()
    if README_SHOTS not in screenshot_folders():
        assert {path: path.read_bytes() for path in README_SHOTS.glob("*.png")} == committed, (
            "a test run leaves docs/screenshots alone"
        )


def test_server_made_results_follow_the_language(doclens_app: RunningApp, chinese_page, tmp_path: Path) -> None:
    """Issue 26 item 8: "✓ 对话模型: Connected to …" and "not a PDF (it looks like plain text)" in the
    Chinese UI."""
    from tests.ui.browser_support import choose_files, create_kb

    page = chinese_page
    page.goto(doclens_app.url)
    page.get_by_role("tab", name="知识库").wait_for()
    wait_idle(page)
    open_tab(page, "设置")
    page.locator("#settings-test-llm").click()
    status = page.locator("#settings-status")
    status.get_by_text("对话模型").wait_for()
    wait_idle(page)
    assert "已连接" in status.inner_text() and "Connected" not in status.inner_text(), status.inner_text()
    open_tab(page, "知识库")
    create_kb(page, "kb-zh-results")
    readme = tmp_path / "readme.pdf"
    readme.write_text("Just some notes, not a PDF at all.\n", encoding="utf-8")
    choose_files(page, readme)
    page.locator("#upload-start").click()
    results = page.locator("#ingest-status")
    results.get_by_text("不是 PDF").wait_for(timeout=120_000)
    assert "plain text" not in results.inner_text() and "看起来是纯文本" in results.inner_text(), results.inner_text()


def selected_tab(page) -> str:
    return page.locator("button[role=tab][aria-selected=true]").inner_text().strip()


def test_language_switches_in_place_and_keeps_the_tab(doclens_app: RunningApp, page, tmp_path: Path) -> None:
    """Issue 26 items 8 and 9: the switch reloaded the page (about 7 s) and landed on Chat; Gradio's own
    strings ("Drop File Here", "Use via API", "Invalid file type … Only .pdf allowed.") stayed English in
    an English-locale browser set to Chinese."""
    page.goto(doclens_app.url)
    page.get_by_role("tab", name="Knowledge base").wait_for()
    wait_idle(page)
    open_tab(page, "Knowledge base")
    wait_idle(page)
    page.evaluate("window.doclensSamePage = true")
    page.locator("#language-switch").get_by_text("中文").click()
    page.get_by_role("tab", name="知识库").wait_for()
    wait_idle(page)
    assert page.evaluate("window.doclensSamePage === true"), "the switch reloaded the page"
    assert selected_tab(page) == "知识库"
    assert [page.locator("button[role=tab]").nth(i).inner_text().strip() for i in range(3)] == [
        "问答",
        "知识库",
        "设置",
    ]
    upload_box = page.locator("#upload-files").inner_text()
    assert "Drop File Here" not in upload_box and "Click to Upload" not in upload_box, upload_box
    assert "Use via API" not in page.locator("body").inner_text()
    readme = tmp_path / "readme.txt"
    readme.write_text("Just some notes.\n", encoding="utf-8")
    page.locator("#upload-files input[type=file]").set_input_files(str(readme))
    page.get_by_text("文件类型无效").first.wait_for()
    shown = page.locator("body").inner_text()
    assert "Invalid file type" not in shown and "Only .pdf allowed" not in shown, shown[-400:]
    assert other_language_strings(whole_page_text(page), "zh") == []

    open_tab(page, "知识库")
    page.locator("#language-switch").get_by_text("English").click()
    page.get_by_role("tab", name="Knowledge base").wait_for()
    wait_idle(page)
    assert page.evaluate("window.doclensSamePage === true")
    assert selected_tab(page) == "Knowledge base"
    assert other_language_strings(whole_page_text(page), "en") == []
