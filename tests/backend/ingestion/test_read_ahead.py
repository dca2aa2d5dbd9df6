"""The files after the current one are read ahead, one after another, within a bound of files and pages.
Real PDFs, a real knowledge base (tests/backend/ingestion/support.py)."""

from __future__ import annotations

import time

from backend.ingestion import read_ahead
from backend.ingestion.read_ahead import AHEAD_FILES, ReadAhead
from backend.ingestion.uploads import UploadItem
from tests.backend.ingestion.support import BUSINESS, COMPUTING, PHYSICS, one_page, open_kb
from tests.support.text_pdf import write_text_pdf


def items_of(*paths) -> list[UploadItem]:
    return [UploadItem(path, path.name) for path in paths]


def wait_for(ahead: ReadAhead, names: list[str], seconds: float = 60.0) -> list[str]:
    deadline = time.monotonic() + seconds
    while ahead.read_whole() != names and time.monotonic() < deadline:
        time.sleep(0.05)
    return ahead.read_whole()


def test_every_small_file_after_the_current_one_is_read_before_its_turn(service, kb):
    items = items_of(PHYSICS, BUSINESS, COMPUTING)
    ahead = ReadAhead(items, service.settings, None)
    try:
        ahead.start_after(items[0], open_kb(service, kb))
        # the file after next is read too, not only the next one
        assert wait_for(ahead, [BUSINESS.name, COMPUTING.name]) == [BUSINESS.name, COMPUTING.name]
        reader = ahead.take(items[1])
        assert reader is not None and len(list(reader.pages())) == reader.page_count
        assert ahead.read_whole() == [COMPUTING.name]
    finally:
        ahead.close()


def test_at_most_a_few_files_are_read_ahead(service, kb, tmp_path):
    paths = [one_page(tmp_path, f"word{i}") for i in range(AHEAD_FILES + 3)]
    items = items_of(*paths)
    ahead = ReadAhead(items, service.settings, None)
    try:
        ahead.start_after(items[0], open_kb(service, kb))
        held = [p.name for p in paths[1 : 1 + AHEAD_FILES]]
        assert wait_for(ahead, held) == held
        time.sleep(0.5)
        assert ahead.read_whole() == held  # no more until one is taken
        assert ahead.take(items[1]) is not None
        assert wait_for(ahead, held[1:] + [paths[1 + AHEAD_FILES].name]) == held[1:] + [paths[1 + AHEAD_FILES].name]
    finally:
        ahead.close()


def test_taking_a_later_file_stops_the_readers_of_the_files_before_it(service, kb, tmp_path):
    paths = [one_page(tmp_path, f"skip{i}") for i in range(4)]
    items = items_of(*paths)
    ahead = ReadAhead(items, service.settings, None)
    try:
        ahead.start_after(items[0], open_kb(service, kb))
        wait_for(ahead, [p.name for p in paths[1:]])
        assert ahead.take(items[3]) is not None  # files 1 and 2 were skipped (cancelled alone, say)
        assert ahead.read_whole() == []
        assert ahead.take(items[1]) is None
    finally:
        ahead.close()


def test_a_file_that_would_pass_the_page_bound_waits_until_the_files_before_it_are_taken(
    service, kb, tmp_path, monkeypatch
):
    monkeypatch.setattr(read_ahead, "AHEAD_PAGES", 6)
    paths = [
        write_text_pdf(tmp_path / f"four{i}.pdf", [[f"Page {p} of file {i}, about rocks."] for p in range(4)])
        for i in range(3)
    ]
    items = items_of(*paths)
    ahead = ReadAhead(items, service.settings, None)
    try:
        ahead.start_after(items[0], open_kb(service, kb))
        assert wait_for(ahead, [paths[1].name]) == [paths[1].name]
        time.sleep(0.5)
        assert ahead.read_whole() == [paths[1].name]  # 4 pages held, 4 more would be 8 of at most 6
        assert ahead.take(items[1]) is not None
        assert wait_for(ahead, [paths[2].name]) == [paths[2].name]
    finally:
        ahead.close()


def test_a_knowledge_base_deleted_meanwhile_stops_reading_ahead_without_an_error(service, kb):
    """The upload says so on the file's own turn; reading ahead, on whichever thread, just stops."""
    items = items_of(PHYSICS, BUSINESS, COMPUTING)
    opened = open_kb(service, kb)
    service.delete_kb(kb)
    ahead = ReadAhead(items, service.settings, None)
    try:
        ahead.start_after(items[0], opened)
        time.sleep(0.5)
        assert ahead.read_whole() == [] and ahead.take(items[1]) is None
    finally:
        ahead.close()
