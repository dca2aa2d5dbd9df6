"""Small documents are embedded together (``ingest.embed_group_chunks``) and still stored, reported and
rolled back one by one. Real PDFs, real Milvus Lite, real embeddings (tests/backend/ingestion/support.py).
"""

from __future__ import annotations

import shutil
import threading

import numpy as np

from backend.types import ProgressEvent
from tests.backend.ingestion.support import (
    BUSINESS,
    COMPUTING,
    PHYSICS,
    assert_consistent,
    blank_pdf,
    open_kb,
)

FILES = [PHYSICS, BUSINESS, COMPUTING]  # two chunks each: one group


def embed_events(events: list[ProgressEvent]) -> list[tuple[str, int, int]]:
    return [(e.file, e.current, e.total) for e in events if e.stage == "embed"]


def stored_vectors(service, kb: str) -> dict[tuple[str, int], np.ndarray]:
    opened = open_kb(service, kb)
    rows = service.store.chunks(opened.collection)
    vectors = service.store.vectors(opened.collection, [r.id for r in rows])
    return {(r.filename, r.chunk_index): vectors[r.id] for r in rows}


def test_small_documents_are_embedded_in_one_call_with_the_vectors_of_each_alone(
    service, kb, service_one_by_one, kb_one_by_one
):
    events: list[ProgressEvent] = []
    results = service.ingest(kb, FILES, progress=events.append)
    assert [r.status for r in results] == ["indexed"] * 3 and [r.file for r in results] == [f.name for f in FILES]
    embedding = embed_events(events)
    assert embedding[-1] == (COMPUTING.name, results[-1].chunks, results[-1].chunks)
    assert {file for file, done, _ in embedding if done == 0} == {f.name for f in FILES}  # each file shows it
    assert all(r.seconds > 0 for r in results)

    alone = service_one_by_one.ingest(kb_one_by_one, FILES)
    assert [r.chunks for r in alone] == [r.chunks for r in results]
    together, separately = stored_vectors(service, kb), stored_vectors(service_one_by_one, kb_one_by_one)
    assert together.keys() == separately.keys()
    assert min(float(together[key] @ separately[key]) for key in together) > 0.9999
    assert_consistent(service, kb)


def test_a_failing_file_among_grouped_ones_fails_alone_and_results_keep_the_files_order(service, kb, tmp_path):
    blank = blank_pdf(tmp_path / "blank.pdf")
    results = service.ingest(kb, [PHYSICS, blank, BUSINESS])
    assert [(r.file, r.status) for r in results] == [
        (PHYSICS.name, "indexed"),
        ("blank.pdf", "failed"),
        (BUSINESS.name, "indexed"),
    ]
    assert "blank.pdf" in results[1].error and "no text" in results[1].error
    assert sorted(d.file for d in service.documents(kb)) == sorted([PHYSICS.name, BUSINESS.name])
    assert_consistent(service, kb)


def test_the_same_content_twice_in_one_upload_is_indexed_once(service, kb, tmp_path):
    copy = tmp_path / "copy of physics.pdf"
    shutil.copyfile(PHYSICS, copy)
    results = service.ingest(kb, [PHYSICS, BUSINESS, copy])
    assert [r.status for r in results] == ["indexed", "indexed", "duplicate"]
    assert PHYSICS.name in results[2].error  # "already indexed as 物理公式示例文档.pdf"
    assert len(service.documents(kb)) == 2
    assert_consistent(service, kb)


def test_cancel_while_a_group_is_embedded_rolls_back_each_of_its_documents(service, kb):
    cancel = threading.Event()

    def progress(event: ProgressEvent) -> None:
        if event.stage == "embed" and event.current > 0:
            cancel.set()  # after the first batch of the group's one call

    results = service.ingest(kb, FILES, progress=progress, cancel=cancel)
    assert [r.status for r in results] == ["cancelled"] * 3
    assert all(r.file in r.error for r in results)
    assert service.documents(kb) == [] and service.store.count(open_kb(service, kb).collection) == 0
    retry = service.ingest(kb, FILES)
    assert [r.status for r in retry] == ["indexed"] * 3
    assert_consistent(service, kb)


def test_a_failure_while_storing_one_grouped_document_costs_only_that_one(service, kb):
    def progress(event: ProgressEvent) -> None:
        if event.stage == "store" and event.file == BUSINESS.name:
            raise RuntimeError("disk full")  # its rows are in, it is not complete yet

    results = service.ingest(kb, FILES, progress=progress)
    assert [r.status for r in results] == ["indexed", "failed", "indexed"]
    assert BUSINESS.name in results[1].error and "disk full" in results[1].error
    assert sorted(d.file for d in service.documents(kb)) == sorted([PHYSICS.name, COMPUTING.name])
    assert_consistent(service, kb)


def test_each_file_of_a_group_reports_its_own_progress_which_never_goes_back(service, kb):
    """Issue 26 item 5: the group is one embedding call, but each file's progress is its own share of it
    (its own chunk count as the total: no jump from 0/9 to 8/27), known as soon as it is parsed, and a
    file's progress never goes back."""
    events: list[ProgressEvent] = []
    results = service.ingest(kb, FILES, progress=events.append)
    assert [r.status for r in results] == ["indexed"] * 3
    for index, result in enumerate(results, 1):
        own = [e for e in events if e.file_index == index and e.stage != "done"]
        assert {e.total for e in own if e.stage == "embed"} == {result.chunks}, result.file
        assert [e for e in own if e.stage == "embed"][-1].current == result.chunks
        fractions = [e.file_fraction for e in own]
        assert fractions == sorted(fractions), (result.file, [(e.stage, e.current, e.total) for e in own])
    parsed_first = next(i for i, e in enumerate(events) if e.file_index == 1 and e.stage == "embed")
    second_file = next(i for i, e in enumerate(events) if e.file_index == 2)
    assert parsed_first < second_file, "the first file's chunk count is known before the next file starts"


def test_one_file_of_a_group_is_cancelled_alone_and_leaves_nothing(service, kb):
    """Issue 26 item 17: cancelling one file of an upload rolls back that file only; the others go on."""
    cancel_files: set[int] = set()
    seen: list[int] = []

    def progress(event: ProgressEvent) -> None:
        if event.file == BUSINESS.name and event.stage == "embed":
            cancel_files.add(1)  # parsed, waiting to be embedded with the next file

    results = service.ingest(
        kb, FILES, progress=progress, cancel_files=cancel_files, on_result=lambda place, r: seen.append(place)
    )
    assert [r.status for r in results] == ["indexed", "cancelled", "indexed"]
    assert BUSINESS.name in results[1].error and "nothing was stored" in results[1].error
    assert sorted(d.file for d in service.documents(kb)) == sorted([PHYSICS.name, COMPUTING.name])
    assert sorted(seen) == [0, 1, 2], "each file's result is handed over once known"
    assert_consistent(service, kb)


def test_a_file_cancelled_while_parsed_or_before_it_starts_leaves_nothing(service_one_by_one, kb_one_by_one):
    cancel_files: set[int] = set()

    def progress(event: ProgressEvent) -> None:
        if event.file_index == 1 and event.stage == "parse":
            cancel_files.update({0, 2})  # the first mid-parse, the third before it starts

    results = service_one_by_one.ingest(kb_one_by_one, FILES, progress=progress, cancel_files=cancel_files)
    assert [r.status for r in results] == ["cancelled", "indexed", "cancelled"]
    assert "before start" in results[2].error
    assert [d.file for d in service_one_by_one.documents(kb_one_by_one)] == [BUSINESS.name]
    assert_consistent(service_one_by_one, kb_one_by_one)


def test_a_file_cancelled_alone_once_its_group_is_embedded_is_not_stored_with_it(service, kb):
    """The group's rows go in with one insert; a file cancelled alone after the group's embedding stops
    that insert, and the others are then stored one by one."""
    cancel_files: set[int] = set()

    def progress(event: ProgressEvent) -> None:
        if event.file == BUSINESS.name and event.stage == "embed" and event.total and event.current == event.total:
            cancel_files.add(1)  # embedded with the group, not stored yet

    results = service.ingest(kb, FILES, progress=progress, cancel_files=cancel_files)
    assert [r.status for r in results] == ["indexed", "cancelled", "indexed"]
    assert sorted(d.file for d in service.documents(kb)) == sorted([PHYSICS.name, COMPUTING.name])
    assert_consistent(service, kb)
