"""Ingestion that is cancelled, fails or is killed leaves nothing behind; the next file is read ahead while
the current one is embedded. Real PDFs, real Milvus Lite, real embeddings (tests/backend/ingestion/support.py).
"""

from __future__ import annotations

import sqlite3
import sys
import threading

import pytest

from backend.service import DocLens
from backend.types import ProgressEvent
from tests.backend.ingestion.support import (
    BUSINESS,
    COMPUTING,
    LAYOUT,
    PHYSICS,
    SCANNED_DOC,
    assert_consistent,
    leftovers,
    open_kb,
)
from tests.conftest import BENCH, make_settings
from tests.support.kill import kill_when


def test_cancel_rolls_back_and_retry_finishes(service, kb):
    cancel = threading.Event()

    def progress(event: ProgressEvent) -> None:
        if event.stage == "parse" and event.current >= 1:
            cancel.set()  # after the first page, as the Cancel button does

    results = service.ingest(kb, [PHYSICS, BUSINESS], progress=progress, cancel=cancel)
    assert [r.status for r in results] == ["cancelled", "cancelled"]
    assert all(r.error and r.file in r.error for r in results)
    assert service.documents(kb) == [] and service.store.count(open_kb(service, kb).collection) == 0
    assert leftovers(service, kb) == {"figures": set(), "previews": set(), "files": set()}

    retry = service.ingest(kb, [PHYSICS, BUSINESS])
    assert [r.status for r in retry] == ["indexed", "indexed"]
    assert_consistent(service, kb)


def reading_ahead() -> bool:
    return any(t.name == "read-ahead" and t.is_alive() for t in threading.enumerate())


def test_next_file_is_read_while_the_current_one_is_embedded(service_one_by_one, kb_one_by_one):
    service, kb = service_one_by_one, kb_one_by_one
    seen: dict[str, bool] = {}

    def progress(event: ProgressEvent) -> None:
        if event.stage == "embed":
            seen.setdefault(event.file, reading_ahead())

    results = service.ingest(kb, [PHYSICS, BUSINESS, COMPUTING], progress=progress)
    assert [r.status for r in results] == ["indexed"] * 3
    assert seen == {PHYSICS.name: True, BUSINESS.name: True, COMPUTING.name: False}  # nothing after the last
    assert not reading_ahead()
    service.create_kb("business alone")  # read ahead or not, a file comes out the same
    alone = service.ingest("business alone", [BUSINESS])
    assert alone[0].chunks == results[1].chunks and alone[0].figures == results[1].figures
    assert_consistent(service, kb)


@pytest.mark.slow
def test_a_scanned_file_waits_for_its_turn_to_ocr(service_one_by_one, kb_one_by_one):
    service, kb = service_one_by_one, kb_one_by_one
    scanned = BENCH / "dev-zh" / "docs" / SCANNED_DOC
    seen: list[tuple[bool, bool]] = []

    def progress(event: ProgressEvent) -> None:
        if event.stage == "embed" and event.file == PHYSICS.name and not seen:
            ocr_running = any(t.name.startswith("ocr") and t.is_alive() for t in threading.enumerate())
            seen.append((reading_ahead(), ocr_running))

    results = service.ingest(kb, [PHYSICS, scanned], progress=progress)
    assert [r.status for r in results] == ["indexed", "indexed"] and results[1].ocr_pages == 2
    assert seen == [(True, False)]  # read ahead, but no OCR while the physics file embeds


def test_a_duplicate_is_not_read_ahead(service, kb):
    service.ingest(kb, [PHYSICS])
    seen: list[bool] = []
    results = service.ingest(
        kb, [BUSINESS, PHYSICS], progress=lambda e: seen.append(reading_ahead()) if e.stage == "embed" else None
    )
    assert [r.status for r in results] == ["indexed", "duplicate"] and not any(seen)


def test_cancel_while_the_next_file_is_read_ahead(service, kb):
    cancel = threading.Event()

    def progress(event: ProgressEvent) -> None:
        if event.stage == "embed" and event.file == PHYSICS.name:
            cancel.set()

    results = service.ingest(kb, [PHYSICS, BUSINESS, COMPUTING], progress=progress, cancel=cancel)
    assert [r.status for r in results] == ["cancelled"] * 3
    assert not reading_ahead()
    assert service.documents(kb) == [] and service.store.count(open_kb(service, kb).collection) == 0
    assert leftovers(service, kb) == {"figures": set(), "previews": set(), "files": set()}


def test_failure_after_rows_are_stored_leaves_nothing(service, kb):
    def progress(event: ProgressEvent) -> None:
        if event.stage == "store" and event.file == PHYSICS.name:
            raise RuntimeError("disk full")  # after the rows went in, before the document is complete

    results = service.ingest(kb, [PHYSICS, BUSINESS], progress=progress)
    assert [r.status for r in results] == ["failed", "indexed"]
    assert PHYSICS.name in results[0].error and "disk full" in results[0].error
    assert [d.file for d in service.documents(kb)] == [BUSINESS.name]
    assert_consistent(service, kb)


def test_crash_while_removing_is_finished_at_start(service, kb):
    service.ingest(kb, [PHYSICS])
    doc = service.documents(kb)[0]
    opened = open_kb(service, kb)
    opened.registry.mark_removing(doc.doc_id)  # what OpenKB.remove_document does first ...
    service.store.delete_documents(opened.collection, [doc.doc_id])  # ... then a crash after the rows went
    service.recover()
    assert service.documents(kb) == []
    assert leftovers(service, kb) == {"figures": set(), "previews": set(), "files": set()}
    assert_consistent(service, kb)


_CRASH_DRIVER = """
import sys, time
from pathlib import Path
from backend.service import DocLens
from tests.conftest import make_settings

data, pdf, marker = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])

def progress(event):
    if event.stage == "store":  # rows are in, the document is still pending: wait to be killed
        marker.write_text("stored")
        time.sleep(600)

service = DocLens(make_settings(data))
service.create_kb("crash")
service.ingest("crash", [pdf], progress=progress)
"""


@pytest.mark.slow
def test_kill_during_ingest_is_cleaned_up_at_start(tmp_path):
    data, marker = tmp_path / "data", tmp_path / "stored.marker"
    pdf = LAYOUT / "native_zh_en_20p.pdf"

    def stored_and_pending() -> bool:
        if not marker.exists():
            return False
        registries = list((data / "kbs").glob("*/registry.sqlite3"))
        with sqlite3.connect(registries[0]) as db:
            assert db.execute("SELECT status FROM documents").fetchall() == [("pending",)]
        return True

    kill_when(
        [sys.executable, "-c", _CRASH_DRIVER, str(data), str(pdf), str(marker)],
        stored_and_pending,
        "to the store stage",
    )

    with DocLens(make_settings(data)) as service:  # start-up runs recover()
        assert service.documents("crash") == []
        assert service.store.count(open_kb(service, "crash").collection) == 0
        # what stays is what the same file's next upload resumes from: the pages read and their figures
        parsed = {p.stem for p in (open_kb(service, "crash").folder / "parsed").glob("*.jsonl")}
        assert len(parsed) == 1
        assert leftovers(service, "crash") == {"figures": parsed, "previews": set(), "files": set()}
        events: list = []
        again = service.ingest("crash", [pdf], progress=events.append)
        assert again[0].status == "indexed" and again[0].pages == 20 and again[0].figures >= 3
        assert not [e for e in events if e.stage in ("parse", "ocr") and e.current < 20]  # nothing read twice
        assert_consistent(service, "crash")
        assert not list((open_kb(service, "crash").folder / "parsed").glob("*"))
