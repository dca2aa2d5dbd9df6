"""The trash in a real browser (Debian chromium + Playwright, issue 27 item 4): a document deleted in the
Knowledge base tab is listed in its trash and restored from there, back in the documents table."""

from __future__ import annotations

import re

import pytest

from tests.ui.browser_support import choose, field, new_kb_with, skip_without_chromium, wait_for_text, wait_idle
from tests.ui.conftest import SAMPLE_PDF, RunningApp

pytestmark = pytest.mark.slow
skip_without_chromium()


def test_a_deleted_document_is_restored_from_the_kb_tab(doclens_app: RunningApp, page) -> None:
    new_kb_with(page, doclens_app.url, "kb-trash", SAMPLE_PDF)
    wait_for_text(page, "#docs-table", SAMPLE_PDF.name)
    choose(page, "doc-delete-pick", SAMPLE_PDF.name)
    page.locator("#doc-delete").click()
    page.locator("#doc-delete-confirmation").get_by_text("stays in the trash").wait_for()
    page.locator("#doc-delete-confirmation-yes").click()
    page.locator("#kb-status").get_by_text("restore it from the trash").wait_for()
    wait_for_text(page, "#docs-table", SAMPLE_PDF.name, gone=True)

    page.locator("#trash").get_by_text("Trash").first.click()  # open the accordion: the trash is listed
    wait_for_text(page, "#trash-table", SAMPLE_PDF.name)
    assert "kb-trash" in page.locator("#trash-table").inner_text()
    field(page, "trash-pick").click()
    page.get_by_role("option", name=re.compile(re.escape(SAMPLE_PDF.name) + ".* · kb-trash · ")).click()
    page.locator("#trash-restore").click()
    page.locator("#trash-status").get_by_text("Restored").wait_for()
    wait_idle(page)
    wait_for_text(page, "#docs-table", SAMPLE_PDF.name)  # back in the documents table
    page.wait_for_function(  # its row left the trash (another test's deletion of the same file may stay)
        "([name, kb]) => ![...document.querySelectorAll('#trash-table [role=row]')]"
        ".some((row) => row.innerText.includes(name) && row.innerText.includes(kb))",
        arg=[SAMPLE_PDF.name, "kb-trash"],
        timeout=30_000,
    )
