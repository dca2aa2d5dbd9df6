"""A kill -9 in the middle of a move into or out of the trash (issue 27 item 5): the next start finds each
knowledge base and document whole in one place, listed or in the trash, and the same answers as before.

A child process does the deletion or the restore on a real store and pauses at one step (the store's or
the registry's real call, then a marker and a long sleep), where the test kills it."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from backend.service import DocLens
from tests.backend.ingestion.support import BUSINESS, COMPUTING, assert_consistent
from tests.conftest import make_settings
from tests.support.kill import kill_when

pytestmark = pytest.mark.slow
KB = "crash"
QUESTIONS = ["商业分析的主要方法", "算法的时间复杂度"]

_DRIVER = """
import sys, time
from pathlib import Path
from backend.knowledge_bases.registry import Registry
from backend.service import DocLens
from tests.conftest import make_settings

data, marker, action, method, when = Path(sys.argv[1]), Path(sys.argv[2]), *sys.argv[3:]

def pause():
    marker.write_text("paused")
    time.sleep(600)

service = DocLens(make_settings(data))
owner = Registry if method in ("trash_document", "restore_document") else service.store
real = getattr(owner, method)

def paused(*args, **kwargs):
    if when == "before":
        pause()
    result = real(*args, **kwargs)
    pause()
    return result

setattr(owner, method, paused)
if action == "delete_kb":
    service.delete_kb("crash")
elif action == "delete_document":
    service.delete_document("crash", sys.argv[6] if len(sys.argv) > 6 else "商业分析示例文档.pdf")
else:
    service.restore(service.trash_entries()[0].id)
"""


def answers(service: DocLens) -> list:
    return [
        [(s.chunk_id, round(s.relevance, 3)) for s in service.search(KB, q, mode=mode, top=6).sources]
        for q in QUESTIONS
        for mode in ("rerank", "keyword")
    ]


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> tuple[Path, list]:
    """A data folder with one knowledge base of two documents, and its answers."""
    data = tmp_path_factory.mktemp("trash-crash") / "data"
    with DocLens(make_settings(data)) as service:
        service.create_kb(KB)
        assert all(r.ok for r in service.ingest(KB, [BUSINESS, COMPUTING]))
        return data, answers(service)


def copy_of(template: Path, tmp_path: Path, deleted: str = "") -> Path:
    """The template's data folder copied, with the knowledge base (or one document) already in the trash."""
    data = tmp_path / "data"
    shutil.copytree(template, data)
    if deleted:
        with DocLens(make_settings(data)) as service:
            if deleted == "kb":
                service.delete_kb(KB)
            else:
                service.delete_document(KB, BUSINESS.name)
    return data


def kill_at(data: Path, tmp_path: Path, action: str, method: str, when: str) -> None:
    marker = tmp_path / "paused.marker"
    command = [sys.executable, "-c", _DRIVER, str(data), str(marker), action, method, when]
    kill_when(command, marker.exists, "to the step")


def where_the_kb_is(service: DocLens, data: Path) -> str:
    """ "listed" or "trash", never both, never half: its collection, folder and entry in one place."""
    listed = KB in [kb.name for kb in service.list_kbs()]
    entries = [e for e in service.trash_entries() if e.kind == "kb"]
    collections = {c.name for c in service.store.list_collections()}
    trash_dirs = sorted(p.name for p in (data / "trash").iterdir()) if (data / "trash").exists() else []
    kb_dirs = sorted(p.name for p in (data / "kbs").iterdir())
    if listed:
        assert entries == [] and trash_dirs == [] and kb_dirs == [service.open_kb(KB).collection]
        assert collections == {service.open_kb(KB).collection}
        assert_consistent(service, KB)
        return "listed"
    assert len(entries) == 1 and trash_dirs == [entries[0].id] and kb_dirs == []
    assert collections == {"trash_" + entries[0].id}
    assert (data / "trash" / entries[0].id / "kb" / "registry.sqlite3").is_file()
    return "trash"


def assert_whole_in_one_place(data, expected: str, before) -> None:
    """After the kill the next start finds the KB where ``expected`` says; from the trash it restores,
    and either way it answers as before."""
    with DocLens(make_settings(data)) as service:
        assert where_the_kb_is(service, data) == expected
        if expected == "trash":
            service.restore(service.trash_entries()[0].id)
            assert where_the_kb_is(service, data) == "listed"
        assert answers(service) == before


@pytest.mark.parametrize(
    ("method", "when", "expected"),
    [
        ("rename_collection", "before", "listed"),  # the entry written, nothing moved: undone
        ("seal", "after", "listed"),  # Lite 2.x renames by copying: the copy whole, the original not dropped
        ("rename_collection", "after", "trash"),  # renamed, the folder not moved yet: finished
    ],
)
def test_a_kill_during_a_kb_deletion(template, tmp_path, method, when, expected):
    source, before = template
    data = copy_of(source, tmp_path)
    kill_at(data, tmp_path, "delete_kb", method, when)
    assert_whole_in_one_place(data, expected, before)


@pytest.mark.parametrize(
    ("method", "when", "expected"),
    [
        ("rename_collection", "before", "trash"),  # the folder moved back, the collection not: undone
        ("seal", "after", "trash"),  # a copy cut short before the trash's collection was dropped: undone
        ("rename_collection", "after", "listed"),  # back, only its trash entry left: finished
    ],
)
def test_a_kill_during_a_kb_restore(template, tmp_path, method, when, expected):
    source, before = template
    data = copy_of(source, tmp_path, deleted="kb")
    kill_at(data, tmp_path, "restore", method, when)
    assert_whole_in_one_place(data, expected, before)


@pytest.mark.parametrize("action", ["delete_document", "restore"])
def test_a_kill_during_a_document_deletion_or_restore(template, tmp_path, action):
    """One registry update: after the kill it is done, and undone (or done again) by one more call."""
    source, before = template
    data = copy_of(source, tmp_path, deleted="" if action == "delete_document" else "document")
    method = "trash_document" if action == "delete_document" else "restore_document"
    kill_at(data, tmp_path, action, method, "after")
    with DocLens(make_settings(data)) as service:
        assert_consistent(service, KB)
        in_trash = [e.file for e in service.trash_entries()]
        assert in_trash == ([BUSINESS.name] if action == "delete_document" else [])
        if in_trash:
            assert BUSINESS.name not in {s.file for q in QUESTIONS for s in service.search(KB, q).sources}
            service.restore(service.trash_entries()[0].id)
        assert sorted(d.file for d in service.documents(KB)) == sorted([BUSINESS.name, COMPUTING.name])
        assert answers(service) == before
