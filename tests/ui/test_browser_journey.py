"""The whole user journey in a real browser (Debian chromium + Playwright), one screenshot per step.

Screenshots go to test-artifacts/ui/ (kept by CI). Outside CI the test is skipped when /usr/bin/chromium
is missing; in CI it must run.
"""

from __future__ import annotations

import re

import pytest

from tests.support.fake_openai import images_in
from tests.ui.browser_support import (
    ANSWER_TIMEOUT_MS,
    INGEST_TIMEOUT_MS,
    Steps,
    ask,
    choose,
    choose_files,
    field,
    open_tab,
    picked_tokens,
    skip_without_chromium,
    source_rows,
    wait_idle,
)
from tests.ui.conftest import SAMPLE_PDF, RunningApp

pytestmark = pytest.mark.slow
skip_without_chromium()

KB = "browser-test"


def test_user_journey(doclens_app: RunningApp, page) -> None:
    steps = Steps(page)
    fake = doclens_app.fake
    page.goto(doclens_app.url)
    page.locator("#chatbot").wait_for()
    steps.shot("home")
    create_the_kb(page, steps)
    upload_the_pdf(page, steps)
    keep_the_file_after_the_delete_confirmation(page, steps)
    run_the_selftest(page, steps)
    rows = ask_for_formulas_and_sources(page, steps)
    preview_pages_from_the_table_and_a_citation(page, steps, rows)
    an_older_citation_opens_its_own_source(page)
    figures, chip = ask_about_a_locked_figure(page, steps, fake)
    lock_and_unlock_a_figure(figures, chip, page)
    switch_the_kb_to_a_fresh_conversation(page, rows, figures, chip)
    an_unanswerable_question_abstains(page, fake)
    use_a_narrow_window(page, steps)
    delete_the_kb(page, steps)


def create_the_kb(page, steps: Steps) -> None:
    """Create a knowledge base."""
    open_tab(page, "Knowledge base")
    field(page, "kb-new-name").fill(KB)
    page.locator("#kb-create").click()
    page.locator("#kb-status").get_by_text("Created").wait_for(timeout=INGEST_TIMEOUT_MS)
    assert field(page, "kb-active").input_value() == KB
    steps.shot("kb-created")


def upload_the_pdf(page, steps: Steps) -> None:
    """Upload a PDF and watch the progress finish."""
    choose_files(page, SAMPLE_PDF)
    page.locator("#upload-start").click()
    page.locator("#ingest-status .dl-progress").first.wait_for(timeout=30_000)
    steps.shot("upload-progress")
    page.locator("#ingest-status").get_by_text("indexed").wait_for(timeout=INGEST_TIMEOUT_MS)
    page.wait_for_function(
        "(name) => document.querySelector('#docs-table')?.innerText.includes(name)", arg=SAMPLE_PDF.name
    )
    steps.shot("uploaded", full_page=True)


def keep_the_file_after_the_delete_confirmation(page, steps: Steps) -> None:
    """Deleting a file needs a choice and a confirmation that names it (nothing is pre-selected)."""
    assert field(page, "doc-delete-pick").input_value() == "" and not picked_tokens(page, "doc-delete-pick")
    page.locator("#doc-delete").click()
    page.locator("#doc-delete-confirmation").wait_for(state="hidden")
    choose(page, "doc-delete-pick", SAMPLE_PDF.name)
    page.locator("#doc-delete").click()
    page.locator("#doc-delete-confirmation").get_by_text(SAMPLE_PDF.name).wait_for()
    steps.shot("file-delete-confirm", show="#doc-delete-confirmation")
    page.locator("#doc-delete-confirmation-no").click()
    page.locator("#doc-delete-confirmation").wait_for(state="hidden")
    assert SAMPLE_PDF.name in page.locator("#docs-table").inner_text(), "Keep it keeps the file"


def run_the_selftest(page, steps: Steps) -> None:
    """The self-test reports its metrics."""
    page.locator("#quality").get_by_text("Quality checks").click()
    page.locator("#selftest-run").click()
    page.locator("#quality-report table").wait_for(timeout=ANSWER_TIMEOUT_MS)
    steps.shot("selftest", show="#quality-report")


def ask_for_formulas_and_sources(page, steps: Steps):
    """Ask: streamed answer with KaTeX formulas and sources with pages. Returns the sources' rows."""
    open_tab(page, "Chat")
    page.wait_for_function(f"() => document.querySelector('#kb-select input')?.value === '{KB}'")
    wait_idle(page)
    ask(page, "What is the key formula in the document?")
    answer = page.locator("#chatbot .message-row.bot-row, #chatbot .bot").first
    answer.locator(".katex").first.wait_for()
    assert "It costs $5 and $10." in answer.inner_text()  # prices are not math...
    assert answer.locator(".katex").count() >= 4  # ...but $$, $, \( and \[ all are
    rows = source_rows(page, SAMPLE_PDF.name)
    assert re.search(r"\d+%", rows.first.inner_text())
    assert page.locator("#confidence").get_by_text("%").count() >= 1
    steps.shot("answer")
    return rows


def an_unanswerable_question_abstains(page, fake) -> None:
    """Issue 30 item 3: below the threshold the chat says the documents do not seem to hold the answer,
    quotes the closest passages as closest, and the panel says so; the model is not asked."""
    answers_before = len([r for r in fake.chat_requests() if r.body.get("stream")])
    ask(page, "What was the stock price of Apple in 1850?")
    notice = page.locator("#chatbot").get_by_text("Your documents do not seem to hold the answer")
    notice.wait_for()
    assert "closest, not an answer" in notice.inner_text()
    assert page.locator("#chatbot .dl-cite").count() >= 1  # the closest passages, each with its citation
    panel = page.locator("#confidence")
    assert "not an answer" in panel.inner_text() and panel.locator(".dl-abstained").count() == 1
    assert len([r for r in fake.chat_requests() if r.body.get("stream")]) == answers_before


def preview_pages_from_the_table_and_a_citation(page, steps: Steps, rows) -> None:
    """A source's page as an image: from the table, and from a [n] citation in the answer."""
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


def an_older_citation_opens_its_own_source(page) -> None:
    """[n] in the older answer asks for that answer's source n, not the newest answer's."""
    joined: list[str] = []
    page.on("request", lambda request: joined.append(request.post_data or "") if "queue/join" in request.url else None)
    older_cite = page.locator("#chatbot .message-row.bot-row, #chatbot .bot").first.locator(".dl-cite").first
    assert "dl-answer-0" in (older_cite.get_attribute("class") or ""), "the chat keeps the answer's number"
    older_cite.click()
    page.wait_for_function("() => document.querySelector('#page-preview img')")
    wait_idle(page)
    assert any('"0:1"' in body for body in joined), joined


def ask_about_a_locked_figure(page, steps: Steps, fake):
    """Lock a figure, ask about it: the vision request carries the image. Returns the gallery's figures
    and the lock chip."""
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
    return figures, chip


def lock_and_unlock_a_figure(figures, chip, page) -> None:
    """Lock again and unlock with the ✕."""
    figures.first.click()
    chip.wait_for()
    page.locator("#figure-unlock").click()
    chip.wait_for(state="hidden")


def switch_the_kb_to_a_fresh_conversation(page, rows, figures, chip) -> None:
    """Switching the knowledge base starts a fresh conversation view."""
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


def use_a_narrow_window(page, steps: Steps) -> None:
    """A narrow window still works."""
    page.set_viewport_size({"width": 420, "height": 800})
    page.wait_for_timeout(500)
    steps.shot("narrow", full_page=True)
    page.set_viewport_size({"width": 1280, "height": 800})


def delete_the_kb(page, steps: Steps) -> None:
    """Delete the knowledge base through the confirmation."""
    open_tab(page, "Knowledge base")
    page.locator("#kb-delete").click()
    confirm = page.locator("#kb-delete-confirmation-yes")
    confirm.wait_for()
    steps.shot("delete-confirm")
    confirm.click()
    page.locator("#kb-status").get_by_text("Deleted").wait_for()
    assert field(page, "kb-active").input_value() != KB
    steps.shot("kb-deleted")
