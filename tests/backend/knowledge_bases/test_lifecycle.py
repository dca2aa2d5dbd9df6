"""Knowledge bases through the service facade, on a real Milvus Lite store in a temp folder."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from backend.errors import KnowledgeBaseError
from backend.knowledge_bases import names
from backend.service import DocLens
from tests.conftest import make_settings

NAMES = ["物理论文", "Contracts 2024", "📚 reading list", "混合 Mixed 名字", "x" * 42]


@pytest.fixture
def service(settings):
    with DocLens(settings) as svc:
        yield svc


def test_create_list_rename_delete_round_trip(service):
    for name in NAMES:
        created = service.create_kb(name)
        assert created.collection == names.collection_name(name)
        assert (service.kbs.folder(created.collection)).is_dir()
    listed = {kb.name: kb for kb in service.list_kbs()}
    assert set(listed) == set(NAMES)
    kb = listed["物理论文"]
    assert (kb.documents, kb.chunks, kb.dim) == (0, 0, 384)
    assert kb.embedding_model == "bundled:multilingual-e5-small"

    renamed = service.rename_kb("物理论文", "Physics 物理 ⚛")
    assert renamed.name == "Physics 物理 ⚛"
    assert service.kbs.folder(renamed.collection).is_dir()
    assert not service.kbs.folder(kb.collection).exists()
    assert "物理论文" not in {k.name for k in service.list_kbs()}

    for name in [n for n in NAMES if n != "物理论文"] + ["Physics 物理 ⚛"]:
        folder = service.kbs.folder(names.collection_name(name))
        service.delete_kb(name)
        assert not folder.exists()
    assert service.list_kbs() == []


def test_names_are_trimmed_and_validated(service):
    assert service.create_kb("  padded  ").name == "padded"
    with pytest.raises(KnowledgeBaseError, match="already exists"):
        service.create_kb("padded")
    with pytest.raises(KnowledgeBaseError, match="at most 42"):
        service.create_kb("y" * 43)
    with pytest.raises(KnowledgeBaseError, match="empty"):
        service.create_kb("   ")
    with pytest.raises(KnowledgeBaseError, match="control"):
        service.create_kb("bad\nname")
    service.create_kb("other")
    with pytest.raises(KnowledgeBaseError, match="already exists"):
        service.rename_kb("padded", "other")
    with pytest.raises(KnowledgeBaseError, match="does not exist"):
        service.delete_kb("missing")


def test_names_that_differ_only_in_case_are_refused(service, caplog):
    """Issue 26 item 15 / issue 31 item 8: "Papers" and "papers" (or a full-width "Ｐａｐｅｒｓ") would be two
    knowledge bases nobody can tell apart in a list: creating or renaming to one is refused, naming the
    one that exists; changing only the case of a name is a rename like any other, and logs no error."""
    service.create_kb("Papers")
    service.create_kb("Notes")
    for taken in ("papers", "PAPERS", "Ｐａｐｅｒｓ"):
        with pytest.raises(KnowledgeBaseError, match="'Papers' already exists.*only in case"):
            service.create_kb(taken)
        with pytest.raises(KnowledgeBaseError, match="'Papers' already exists.*only in case"):
            service.rename_kb("Notes", taken)
    caplog.clear()
    assert service.rename_kb("Papers", "papers").name == "papers"
    assert sorted(kb.name for kb in service.list_kbs()) == ["Notes", "papers"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text


def test_a_new_process_sees_the_same_kbs(settings):
    with DocLens(settings) as first:
        first.create_kb("持久 persistent")
    with DocLens(settings) as second:
        assert [kb.name for kb in second.list_kbs()] == ["持久 persistent"]


def test_model_mismatch_is_a_clear_error(tmp_path):
    settings = make_settings(tmp_path / "data")
    with DocLens(settings) as service:
        # A KB built with another model: the collection records it at creation.
        service.store.create_collection(names.collection_name("kb"), 384, "BAAI/bge-small-zh-v1.5")
        with pytest.raises(
            KnowledgeBaseError, match="built with embedding model BAAI/bge-small-zh-v1.5.*set embedding.model"
        ):
            service.search("kb", "question")
        # Listing, renaming and deleting still work: only using the vectors needs the same model.
        assert [kb.embedding_model for kb in service.list_kbs()] == ["BAAI/bge-small-zh-v1.5"]
        service.delete_kb("kb")


# ------------------------------------------------------------ the document lifecycle (issue 14 item 3)


def test_the_knowledge_base_owns_its_folder_layout_and_removes_documents(service, tmp_path):
    from tests.backend.ingestion.support import PHYSICS

    service.create_kb("layout")
    [result] = service.ingest("layout", [PHYSICS])
    assert result.ok and result.figures > 0
    kb = service.open_kb("layout")
    doc = kb.find_document(PHYSICS.name)
    assert kb.original_pdf(doc.doc_id).is_file()
    figures = kb.registry.figures(doc.doc_id)
    assert figures and all(Path(f.path).parent == kb.figure_dir(doc.doc_id) for f in figures)
    preview = service.page_image("layout", PHYSICS.name, 1)
    assert preview.parent == kb.preview_dir(doc.doc_id)
    assert kb.figure(figures[0].id) == figures[0]

    kb.remove_document(doc.doc_id)
    assert not kb.original_pdf(doc.doc_id).exists()
    assert not kb.figure_dir(doc.doc_id).exists() and not kb.preview_dir(doc.doc_id).exists()
    assert kb.registry.document(doc.doc_id) is None
    assert service.store.chunks(kb.collection, doc_id=doc.doc_id) == []
    with pytest.raises(KnowledgeBaseError, match="is not in knowledge base 'layout'"):
        kb.find_document(PHYSICS.name)


def test_recovery_removes_a_document_left_pending_by_a_crash(settings, tmp_path):
    """An upload that died after registering and keeping its original: the next start removes both."""
    from tests.backend.ingestion.support import PHYSICS

    with DocLens(settings) as first:
        first.create_kb("crashed")
        kb = first.open_kb("crashed")
        kb.begin_document("0" * 32, PHYSICS.name, "0" * 64)
        kb.keep_original("0" * 32, PHYSICS)
        assert kb.registry.pending_ids() == ["0" * 32]
    with DocLens(settings) as second:  # the start recovers (KnowledgeBases.recover)
        kb = second.open_kb("crashed")
        assert kb.registry.pending_ids() == [] and kb.registry.document("0" * 32) is None
        assert not kb.original_pdf("0" * 32).exists()
