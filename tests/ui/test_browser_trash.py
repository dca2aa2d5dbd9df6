"""The trash in a real browser (Debian chromium + Playwright, issue 27 item 4): a document deleted in the
Knowledge base tab is listed in its trash and restored from there, back in the documents table."""

from __future__ import annotations

import re

import pytest

from tests.ui.browser_support import NOT_YET_GREEN, choose, field, new_kb_with, skip_without_chromium, wait_idle
from tests.ui.conftest import SAMPLE_PDF, RunningApp

pytestmark = pytest.mark.slow
skip_without_chromium()


def cell(table):
    """The document's cell in a table (its text is in a wrapper and in the cell itself)."""
    return table.get_by_text(SAMPLE_PDF.name, exact=True).first


@NOT_YET_GREEN
def test_a_deleted_document_is_restored_from_the_kb_tab(doclens_app: RunningApp, page) -> None:
    new_kb_with(page, doclens_app.url, "kb-trash", SAMPLE_PDF)
    table = page.locator("#docs-table")
    cell(table).wait_for()
    choose(page, "doc-delete-pick", SAMPLE_PDF.name)
    page.locator("#doc-delete").click()
    page.locator("#doc-delete-confirmation").get_by_text("stays in the trash").wait_for()
    page.locator("#doc-delete-confirmation-yes").click()
    page.locator("#kb-status").get_by_text("restore it from the trash").wait_for()
    cell(table).wait_for(state="detached")

    page.locator("#trash").get_by_text("Trash").first.click()  # open the accordion: the trash is listed
    trash = page.locator("#trash-table")
    cell(trash).wait_for()
    assert "kb-trash" in trash.inner_text()
    field(page, "trash-pick").click()
    page.get_by_role("option", name=re.compile(re.escape(SAMPLE_PDF.name))).click()
    page.locator("#trash-restore").click()
    page.locator("#trash-status").get_by_text("Restored").wait_for()
    wait_idle(page)
    cell(table).wait_for()  # back in the documents table
    cell(trash).wait_for(state="detached")
