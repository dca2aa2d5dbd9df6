"""pdfium is called from one thread at a time: uploads parse while the UI renders page previews."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from backend.documents.pdf import parse_pdf
from backend.documents.pdfium_lock import PDFIUM_LOCK
from backend.documents.preview import render_page
from tests.conftest import BENCH, SAMPLES, make_settings

NATIVE = SAMPLES / "layout" / "native_zh_en_20p.pdf"
SCANNED = BENCH / "dev-zh" / "docs" / "zh_011.pdf"
PREVIEWED = SAMPLES / "物理公式示例文档.pdf"


def test_previews_render_while_a_file_is_parsed(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "data")
    expected = [(p.page, p.text) for p in parse_pdf(NATIVE, settings)]
    parsed: list = []
    parser = threading.Thread(target=lambda: parsed.extend(parse_pdf(NATIVE, settings)))
    parser.start()
    previews = []
    while parser.is_alive() or not previews:
        previews.append(render_page(PREVIEWED, len(previews) % 2 + 1, f"probe {len(previews)}", tmp_path / "previews"))
    parser.join()
    assert [(p.page, p.text) for p in parsed] == expected
    assert all(p.is_file() and p.stat().st_size > 1000 for p in previews)


@pytest.mark.slow
def test_ocr_runs_without_holding_the_pdfium_lock(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "data")
    parser = threading.Thread(target=lambda: parse_pdf(SCANNED, settings))
    parser.start()
    deadline = time.monotonic() + 60
    while not any(t.name.startswith("ocr") and t.is_alive() for t in threading.enumerate()):
        assert time.monotonic() < deadline and parser.is_alive(), "OCR never started"
        time.sleep(0.01)
    got = PDFIUM_LOCK.acquire(timeout=2)  # a page's OCR takes longer than this
    if got:
        PDFIUM_LOCK.release()
    still_parsing = parser.is_alive()
    parser.join()
    assert got and still_parsing
