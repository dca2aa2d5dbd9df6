"""The trash (issue 27 item 4): a deleted knowledge base or document is hidden from every list and search,
kept, restored as it was (the same answers, nothing embedded again), purged after the retention; names are
never clobbered; every destructive action is in the audit log. Real Milvus Lite, real PDFs, real embeddings.
The kill -9 cases: test_trash_crashes.py."""

from __future__ import annotations

import time

import pytest

from backend.errors import KnowledgeBaseError
from backend.service import DocLens
from tests.backend.ingestion.support import BUSINESS, COMPUTING, PHYSICS
from tests.conftest import make_settings

QUESTIONS = ["简谐振子的能级公式是什么？", "能量守恒", "商业分析的主要方法", "市场规模与增长"]
MODES = ("rerank", "dense", "keyword", "hybrid")
DAYS = 86400.0


def answers(service: DocLens, kb: str) -> list[tuple]:
    """What every mode finds for every question: its passages in order, their scores and the confidence."""
    found = []
    for question in QUESTIONS:
        for mode in MODES:
            result = service.search(kb, question, mode=mode, top=8)
            found.append(
                (
                    question,
                    mode,
                    round(result.confidence, 3),
                    [(s.chunk_id, round(s.relevance, 3)) for s in result.sources],
                )
            )
    return found


def files_found(service: DocLens, kb: str) -> set[str]:
    return {s.file for question in QUESTIONS for mode in MODES for s in service.search(kb, question, mode=mode).sources}


def vectors(service: DocLens, kb: str) -> dict:
    collection = service.open_kb(kb).collection
    ids = [row.id for row in service.store.chunks(collection)]
    return {i: v.tolist() for i, v in service.store.vectors(collection, ids).items()}


@pytest.fixture(scope="module")
def library(service) -> str:
    """Three documents, indexed once for the module; each test leaves it as it found it."""
    service.create_kb("library")
    assert all(r.ok for r in service.ingest("library", [PHYSICS, BUSINESS, COMPUTING]))
    return "library"


def test_a_deleted_kb_is_gone_from_lists_and_comes_back_with_the_same_answers(service, library):
    before, stored = answers(service, library), vectors(service, library)
    collection = service.open_kb(library).collection
    entry = service.delete_kb(library, who="alice")
    assert entry is not None and entry.kind == "kb" and entry.documents == 3 and entry.chunks > 0
    assert library not in [kb.name for kb in service.list_kbs()]
    with pytest.raises(KnowledgeBaseError, match="does not exist"):
        service.search(library, QUESTIONS[0])
    assert not service.store.has_collection(collection) and not service.kbs.folder(collection).exists()
    assert (service.settings.data_dir / "trash" / entry.id / "kb" / "registry.sqlite3").is_file()
    listed = {e.id: e for e in service.trash_entries()}
    assert listed[entry.id].kb == library and listed[entry.id].deleted_by == "alice"
    assert listed[entry.id].expires_at == pytest.approx(entry.deleted_at + 7 * DAYS)

    restored = service.restore(entry.id, who="bob")
    assert restored.kb == library and entry.id not in {e.id for e in service.trash_entries()}
    assert [d.file for d in service.documents(library)] == sorted([PHYSICS.name, BUSINESS.name, COMPUTING.name])
    assert vectors(service, library) == stored  # the same rows and vectors: nothing embedded again
    assert answers(service, library) == before


def test_a_deleted_document_is_never_found_then_comes_back_with_the_same_answers(service, library):
    before = answers(service, library)
    assert PHYSICS.name in files_found(service, library)
    figures = len(service.figures(library))
    entry = service.delete_document(library, PHYSICS.name, who="alice")
    assert entry.kind == "document" and entry.file == PHYSICS.name and entry.chunks > 0

    assert PHYSICS.name not in files_found(service, library)  # dense, keyword, hybrid and reranked
    assert PHYSICS.name not in [d.file for d in service.documents(library)]
    assert all(f.file != PHYSICS.name for f in service.figures(library)) and len(service.figures(library)) < figures
    for use in (
        lambda: service.search(library, QUESTIONS[0], doc=PHYSICS.name),
        lambda: service.summary(library, PHYSICS.name),
        lambda: service.page_image(library, PHYSICS.name, 1),
        lambda: service.figures(library, PHYSICS.name),
    ):
        with pytest.raises(KnowledgeBaseError, match="is not in knowledge base"):
            use()
    kb = service.open_kb(library)
    assert kb.original_pdf(entry.doc_id).is_file()  # kept, with its rows, for a restore
    assert service.store.chunks(kb.collection, doc_id=entry.doc_id)

    service.restore(entry.id)
    assert answers(service, library) == before
    assert len(service.figures(library)) == figures


def test_a_document_in_the_trash_survives_a_restart(tmp_path):
    """Start-up removes what a crash left unfinished: never a document in the trash."""
    settings = make_settings(tmp_path / "data")
    with DocLens(settings) as first:
        first.create_kb("kept")
        first.ingest("kept", [BUSINESS])
        entry = first.delete_document("kept", BUSINESS.name)
    with DocLens(settings) as second:
        assert [e.id for e in second.trash_entries()] == [entry.id]
        second.restore(entry.id)
        assert [d.file for d in second.documents("kept")] == [BUSINESS.name]
        assert {s.file for s in second.search("kept", "商业分析").sources} == {BUSINESS.name}


def test_restoring_a_kb_whose_name_was_taken_is_refused_or_takes_a_new_name(service):
    service.create_kb("reused")
    service.ingest("reused", [BUSINESS])
    entry = service.delete_kb("reused")
    service.create_kb("Reused")  # differs only in case: restoring "reused" beside it would be confusing
    with pytest.raises(KnowledgeBaseError, match="cannot restore 'reused' from the trash.*'Reused' already exists"):
        service.restore(entry.id)
    assert service.documents("Reused") == []  # not clobbered
    restored = service.restore(entry.id, new_name="reused (restored)")
    assert restored.kb == "reused (restored)"
    assert [d.file for d in service.documents("reused (restored)")] == [BUSINESS.name]
    assert service.search("reused (restored)", "商业分析").sources
    for name in ("Reused", "reused (restored)"):
        service.delete_kb(name, permanently=True)


def test_restoring_a_document_whose_name_was_taken_is_refused(service, tmp_path):
    service.create_kb("doc names")
    service.ingest("doc names", [BUSINESS])
    entry = service.delete_document("doc names", BUSINESS.name)
    other = tmp_path / BUSINESS.name
    other.write_bytes(PHYSICS.read_bytes())  # another file of the same name
    assert service.ingest("doc names", [other])[0].status == "indexed"
    with pytest.raises(KnowledgeBaseError, match="a document of that name is there now"):
        service.restore(entry.id)
    assert [e.id for e in service.trash_entries() if e.kb == "doc names"] == [entry.id]  # still restorable
    service.delete_kb("doc names", permanently=True)


def test_the_trash_is_purged_after_its_retention_and_when_emptied(tmp_path):
    settings = make_settings(tmp_path / "data")
    with DocLens(settings) as service:
        for name in ("old", "older"):
            service.create_kb(name)
            service.ingest(name, [BUSINESS])
        doc = service.delete_document("old", BUSINESS.name)
        kb = service.delete_kb("older")
        assert kb is not None
        assert service.trash.purge_expired(now=time.time() + 6 * DAYS) == []  # within the 7 days
        purged = service.trash.purge_expired(now=time.time() + 8 * DAYS)
        assert {e.id for e in purged} == {doc.id, kb.id} and service.trash_entries() == []
        assert not service.store.has_collection("trash_" + kb.id)
        assert not (settings.data_dir / "trash" / kb.id).exists()
        assert service.store.chunks(service.open_kb("old").collection) == []
        assert not service.open_kb("old").original_pdf(doc.doc_id).exists()
        service.ingest("old", [BUSINESS])
        service.delete_kb("old")
    with DocLens(make_settings(tmp_path / "data", DOCLENS_TRASH_RETENTION_DAYS="7")) as again:
        assert len(again.trash_entries()) == 1  # a start within the retention keeps it
    with DocLens(make_settings(tmp_path / "data", DOCLENS_TRASH_RETENTION_DAYS="0")) as again:
        assert again.trash.entries() == []  # the start purged it
        again.create_kb("emptied")
        again.ingest("emptied", [BUSINESS])
        again.delete_document("emptied", BUSINESS.name)
    with DocLens(settings) as service:
        assert len(service.trash_entries()) == 1
        assert len(service.empty_trash(who="cli")) == 1 and service.trash_entries() == []
        whats = [line["what"] for line in service.trash.audit.lines()]
    assert whats.count("purge") == 3 and whats.count("empty_trash") == 1


def test_every_destructive_action_is_in_the_audit_log(tmp_path):
    with DocLens(make_settings(tmp_path / "data")) as service:
        service.create_kb("a")
        service.ingest("a", [BUSINESS])
        service.rename_kb("a", "b", who="alice")
        doc = service.delete_document("b", BUSINESS.name, who="alice")
        service.restore(doc.id, who="bob")
        kb = service.delete_kb("b", who="cli")
        assert kb is not None
        service.restore(kb.id, who="local")
        service.delete_kb("b", who="evil\nname")
        service.empty_trash(who="cli")
        lines = service.trash.audit.lines()
    assert [(line["who"], line["what"]) for line in lines] == [
        ("alice", "rename_kb"),
        ("alice", "delete_document"),
        ("bob", "restore_document"),
        ("cli", "delete_kb"),
        ("local", "restore_kb"),
        ("evilname", "delete_kb"),
        ("cli", "empty_trash"),
    ]
    assert lines[0]["target"] == {"kb": "a", "to": "b"}
    assert lines[1]["target"]["file"] == BUSINESS.name and lines[1]["target"]["trash_id"] == doc.id
    assert all(line["when"].endswith("Z") for line in lines)


def test_a_removed_file_of_a_synced_folder_goes_to_the_trash(service, tmp_path):
    """Issue 28 item 1: a file gone from the folder is moved to the trash, not lost; a second sync has
    nothing to do, and the restore brings back its passages without embedding them again."""
    folder = tmp_path / "papers"
    folder.mkdir()
    for source in (BUSINESS, COMPUTING):
        (folder / source.name).write_bytes(source.read_bytes())
    service.create_kb("synced")
    service.sync("synced", folder)
    (folder / BUSINESS.name).unlink()
    plan = service.sync("synced", folder, who="cli")
    assert [(a.kind, a.status) for a in plan.actions if a.kind != "unchanged"] == [("remove", "done")]
    [entry] = [e for e in service.trash_entries() if e.kb == "synced"]
    assert entry.file == BUSINESS.name and entry.deleted_by == "cli"
    assert BUSINESS.name not in {s.file for s in service.search("synced", "商业分析").sources}
    assert service.sync("synced", folder).in_sync
    service.restore(entry.id)
    assert BUSINESS.name in {s.file for s in service.search("synced", "商业分析").sources}
    service.delete_kb("synced", permanently=True)
