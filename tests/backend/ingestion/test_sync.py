"""``DocLens.sync`` and ``watch_folder`` on real PDFs, real embeddings and real Milvus Lite: a knowledge
base kept equal to a folder (issue 28 item 1). The CLI and kill -9: tests/ui/cli/test_sync.py."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from backend.errors import DocLensError
from tests.backend.ingestion.support import (
    LIMITS,
    PHYSICS,
    assert_consistent,
    blank_pdf,
    one_page,
    open_kb,
)


@pytest.fixture(scope="module")
def service_env() -> dict[str, str]:
    return dict(LIMITS, DOCLENS_SYNC_POLL_SECONDS="0.2")


def put(folder: Path, relative: str, word: str) -> Path:
    """``folder/relative``: a one-page PDF about ``word``."""
    target = folder / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(one_page(folder.parent / "made", word), target)
    return target


def outcome(plan) -> list[tuple[str, str, str]]:
    return sorted((a.kind, a.name, a.status) for a in plan.actions)


def test_sync_adds_replaces_renames_removes_then_has_nothing_to_do(service, kb, tmp_path):
    folder = tmp_path / "papers"
    put(folder, "a.pdf", "basalt")
    put(folder, "sub/b.pdf", "granite")
    put(folder, "c.pdf", "gabbro")
    shutil.copy(PHYSICS, folder / "physics.pdf")  # a document with figures
    told = []
    first = service.sync(kb, folder, on_action=told.append)
    assert outcome(first) == [("add", n, "done") for n in ("a.pdf", "b.pdf", "c.pdf", "physics.pdf")]
    assert sorted(a.name for a in told) == ["a.pdf", "b.pdf", "c.pdf", "physics.pdf"]
    registry = open_kb(service, kb).registry
    b_before = registry.document_by_file("b.pdf")
    vectors_before = _vectors(service, kb, b_before.doc_id)
    assert service.figures(kb, "physics.pdf")

    (folder / "sub" / "b.pdf").rename(folder / "granite.pdf")
    (folder / "physics.pdf").rename(folder / "sub" / "formulas.pdf")
    put(folder, "a.pdf", "diorite")
    (folder / "c.pdf").unlink()
    put(folder, "d.pdf", "peridotite")
    second = service.sync(kb, folder)
    assert outcome(second) == [
        ("add", "d.pdf", "done"),
        ("remove", "c.pdf", "done"),
        ("rename", "formulas.pdf", "done"),
        ("rename", "granite.pdf", "done"),
        ("replace", "a.pdf", "done"),
    ]
    assert sorted(d.file for d in service.documents(kb)) == ["a.pdf", "d.pdf", "formulas.pdf", "granite.pdf"]
    renamed = registry.document_by_file("granite.pdf")
    assert (renamed.doc_id, renamed.created_at) == (b_before.doc_id, b_before.created_at)  # not indexed again
    after = _vectors(service, kb, renamed.doc_id)
    assert after.keys() == vectors_before.keys() and all(np.array_equal(after[i], vectors_before[i]) for i in after)
    assert {c.filename for c in service.store.chunks(open_kb(service, kb).collection, doc_id=renamed.doc_id)} == {
        "granite.pdf"
    }
    assert {s.file for s in service.search(kb, "granite rock", doc="granite.pdf").sources} == {"granite.pdf"}
    assert {f.file for f in service.figures(kb, "formulas.pdf")} == {"formulas.pdf"}
    assert "diorite" in " ".join(s.text for s in service.search(kb, "diorite rock", doc="a.pdf").sources)
    assert_consistent(service, kb)

    third = service.sync(kb, folder)
    assert third.in_sync and {a.kind for a in third.actions} == {"unchanged"}


def test_a_long_name_is_replaced_in_place_not_kept_apart(service, kb, tmp_path):
    """Uploads keep a changed file of a 200-byte name apart (the client may have cut it); a folder's
    names are whole, so sync replaces it, and a second sync has nothing to do."""
    folder = tmp_path / "papers"
    long_name = "数据" * 32 + "x" * 4 + ".pdf"
    assert len(long_name.encode()) == 200
    put(folder, long_name, "basalt")
    service.sync(kb, folder)
    put(folder, long_name, "granite")
    assert outcome(service.sync(kb, folder)) == [("replace", long_name, "done")]
    assert [d.file for d in service.documents(kb)] == [long_name]
    assert service.sync(kb, folder).in_sync
    assert_consistent(service, kb)


def test_a_dry_run_changes_nothing(service, kb, tmp_path):
    folder = tmp_path / "papers"
    put(folder, "a.pdf", "basalt")
    plan = service.sync(kb, folder, dry_run=True)
    assert outcome(plan) == [("add", "a.pdf", "planned")]
    assert service.documents(kb) == []


def test_a_replacement_that_fails_keeps_the_previous_version_searchable(service, kb, tmp_path):
    folder = tmp_path / "papers"
    put(folder, "a.pdf", "basalt")
    service.sync(kb, folder)
    before = service.documents(kb)
    blank_pdf(folder / "a.pdf")  # no text: fails after parsing
    plan = service.sync(kb, folder)
    [action] = plan.actions
    assert (action.kind, action.status) == ("replace", "failed")
    assert "no text" in action.detail and "previous version stays searchable" in action.detail
    assert service.documents(kb) == before
    assert {s.file for s in service.search(kb, "basalt rock").sources} == {"a.pdf"}
    assert_consistent(service, kb)


def test_a_folder_without_pdfs_does_not_empty_the_knowledge_base(service, kb, tmp_path):
    folder = tmp_path / "papers"
    put(folder, "a.pdf", "basalt")
    service.sync(kb, folder)
    (folder / "a.pdf").unlink()
    with pytest.raises(DocLensError, match="has no PDFs: syncing would remove all 1 documents"):
        service.sync(kb, folder)
    assert [d.file for d in service.documents(kb)] == ["a.pdf"]
    with pytest.raises(DocLensError, match="not a folder"):
        service.sync(kb, tmp_path / "missing")


def test_watching_indexes_a_file_added_meanwhile_and_stops(service, kb, tmp_path):
    assert service.settings.sync.poll_seconds == 0.2
    folder = tmp_path / "papers"
    put(folder, "a.pdf", "basalt")
    stop, plans, errors = threading.Event(), [], []
    watcher = threading.Thread(
        target=service.watch_folder, args=(kb, folder, stop, plans.append), kwargs={"on_error": errors.append}
    )
    watcher.start()
    try:
        _wait(lambda: [d.file for d in service.documents(kb)] == ["a.pdf"])
        put(folder, "b.pdf", "granite")
        _wait(lambda: sorted(d.file for d in service.documents(kb)) == ["a.pdf", "b.pdf"])
        (folder / "a.pdf").unlink()
        _wait(lambda: [d.file for d in service.documents(kb)] == ["b.pdf"])
    finally:
        stop.set()
        watcher.join(timeout=60)
    assert not watcher.is_alive() and errors == []
    done = [(a.kind, a.name) for plan in plans for a in plan.changes if a.status == "done"]
    assert done == [("add", "a.pdf"), ("add", "b.pdf"), ("remove", "a.pdf")]
    assert_consistent(service, kb)


def _vectors(service, kb: str, doc_id: str) -> dict[str, np.ndarray]:
    collection = open_kb(service, kb).collection
    ids = [c.id for c in service.store.chunks(collection, doc_id=doc_id)]
    return service.store.vectors(collection, ids)


def _wait(condition, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.1)
