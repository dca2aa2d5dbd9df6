"""bench-page on a small library: a real `main.py serve`, a real Chromium; the waits are printed by the
benchmark, never asserted. The library is left as it was (the upload is cancelled or removed)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from backend.knowledge_bases.registry import Registry
from backend.quality.bench_page import KB_NAME, forget_upload, library_folder, run, table
from backend.service import DocLens
from tests.conftest import make_settings
from tests.support.text_pdf import repeat_pages, write_scanned_pdf
from tests.ui.browser_support import skip_without_chromium

pytestmark = pytest.mark.slow


def file_names(settings, folder: Path) -> list[str]:
    with DocLens(settings.model_copy(update={"data_dir": folder})) as service:
        return [d.file for d in service.documents(KB_NAME)]


def test_the_three_waits_are_timed_and_the_library_stays_as_it_was(tmp_path: Path) -> None:
    skip_without_chromium()
    settings = make_settings(tmp_path / "data")
    # long enough to outlive the reload on any machine (40 pages OCR in 17 s here); cancelled once the
    # reload is timed, so its length costs no time
    line = "the keeper measured the tide at dawn and at dusk, and wrote it down."
    pages = [[f"Page {n}: {line}", f"Then {line}", f"And {line}"] for n in range(10)]
    upload = repeat_pages(write_scanned_pdf(tmp_path / "tide-log.pdf", pages, dpi=150), 30)
    report = run(settings, 20, 1, upload)
    [timed] = report["runs"]
    assert 0 < timed["first_page_s"] <= timed["page_drawn_s"] <= timed["page_ready_s"]
    assert timed["switch_s"] > 0 and timed["reload_to_progress_s"] > 0
    assert "| median |" in table(report)
    folder = library_folder(settings, 20)
    forget_upload(settings, folder, upload.name)  # had the cancel come after the last page
    names = file_names(settings, folder)
    assert len(names) == 20 and upload.name not in names


def test_a_leftover_upload_is_removed_before_a_run(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "data")
    folder = library_folder(settings, 3)
    kb_folder = next((folder / "kbs").iterdir())
    leftover = dataclasses.replace(Registry(kb_folder).documents()[0], doc_id="f" * 32, file="tide-log.pdf")
    Registry(kb_folder).add_documents([leftover])
    assert "tide-log.pdf" in file_names(settings, folder)
    forget_upload(settings, folder, "tide-log.pdf")
    assert sorted(file_names(settings, folder)) == [f"paper_{i:05d}.pdf" for i in range(3)]
