"""An upload a restart cut short goes on at the app's next start (issue 25 item 6), in a real browser
(Debian chromium + Playwright): a browser that did not start it opens the Knowledge base tab and sees the
resumed upload's bar (page, pages/s, time left) and its row being indexed, then the document indexed. Outside
CI skipped when /usr/bin/chromium is missing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.service import DocLens
from backend.types import ProgressEvent
from tests.conftest import make_settings
from tests.support.text_pdf import write_scanned_pdf
from tests.ui.browser_support import DOC_ROWS, INGEST_TIMEOUT_MS, open_tab, skip_without_chromium
from tests.ui.conftest import ARTIFACTS, running_app

pytestmark = pytest.mark.slow
skip_without_chromium()

BOOK = "my book.pdf"
KB = "Default"
# Long enough that the resumed upload is still running when the browser looks, on a loaded CI machine:
# 36 pages were OCR'd in 9 s, before a slow hour's browser had the Knowledge base tab drawn.
PAGES = 72


def _cut_short(data_dir: Path) -> None:
    """A scan of PAGES pages of one line each (light: other browser tests run beside it) whose upload stopped
    (Ctrl-C) at OCR page 3: two pages and the original are kept."""
    scan = write_scanned_pdf(
        data_dir.parent / "book.pdf", [[f"Page {n}: the keeper logged the tide."] for n in range(PAGES)]
    )

    def stop_at_page_3(event: ProgressEvent) -> None:
        if event.stage == "ocr" and event.current == 3:
            raise KeyboardInterrupt

    with DocLens(make_settings(data_dir)) as service:
        service.create_kb(KB)
        with pytest.raises(KeyboardInterrupt):
            service.ingest(KB, [scan], progress=stop_at_page_3, display_names=[BOOK])
        assert service.interrupted_uploads() == {KB: [BOOK]}


def test_an_upload_cut_short_goes_on_at_the_next_start_with_its_bar(tmp_path: Path, browser_page) -> None:
    data_dir = tmp_path / "data"
    _cut_short(data_dir)
    with running_app(data_dir, "resume-app.log") as app:
        page = browser_page
        page.goto(app.url)
        open_tab(page, "Knowledge base")
        page.wait_for_function(
            "(pages) => new RegExp(`OCR page \\\\d+ of ${pages} .* pages/s`)"
            ".test(document.querySelector('#ingest-status')?.innerText || '')",
            arg=PAGES,
            timeout=INGEST_TIMEOUT_MS,
        )
        bar = page.locator("#ingest-status").inner_text()
        assert bar.startswith("Resuming an upload a restart cut short") and BOOK in bar and " left" in bar, bar
        assert "being indexed" in page.locator(DOC_ROWS).first.inner_text()
        page.screenshot(path=str(ARTIFACTS / "resumed-upload.png"), full_page=True)
        page.wait_for_function(
            "(book) => (document.querySelector('#ingest-status')?.innerText || '').includes('indexed')",
            arg=BOOK,
            timeout=INGEST_TIMEOUT_MS,
        )
        status = page.locator("#ingest-status").inner_text()
        assert BOOK in status and "indexed" in status and "Resuming" not in status, status
        assert f"resuming after page 2 of {PAGES}" in app.log_path.read_text(encoding="utf-8")
