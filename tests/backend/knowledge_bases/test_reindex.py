"""A data folder made with Milvus Lite 3.x opens on the Lite 2.5 engine: its knowledge bases come back.

The knowledge-base folders (registry, original PDFs, figures) are what DocLens writes on any engine; the
old store is made a folder, as Lite 3.x leaves it (its content is never read: the PDFs are indexed again).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from backend.knowledge_bases import old_folders
from backend.service import DocLens
from tests.conftest import SAMPLES, make_settings

PHYSICS = SAMPLES / "物理公式示例文档.pdf"
BUSINESS = SAMPLES / "商业分析示例文档.pdf"


def _as_left_by_lite3(store: Path) -> None:
    store.unlink()
    store.mkdir()
    (store / "LOCK").touch()
    (store / "MANIFEST").write_bytes(b"lite3")


def _documents(service: DocLens, kb: str) -> dict[str, tuple[str, int, int]]:
    return {d.file: (d.sha256, d.pages, d.chunks) for d in service.documents(kb)}


def test_a_lite3_data_folder_is_indexed_again_from_its_pdfs(tmp_path):
    settings = make_settings(tmp_path / "data")
    with DocLens(settings) as service:
        service.create_kb("物理 Physics")
        service.ingest("物理 Physics", [PHYSICS, BUSINESS])
        service.create_kb("empty")
        service.create_kb("lost")
        service.ingest("lost", [PHYSICS])
        before = _documents(service, "物理 Physics")
        kb = service.open_kb("物理 Physics")
        summarized = kb.registry.documents()[0]
        kb.registry.save_summary(summarized.doc_id, "kept summary")
        lost = service.open_kb("lost")
        lost_file = lost.folder / "files" / f"{lost.registry.documents()[0].doc_id}.pdf"
    lost_file.unlink()  # an original that went missing: reported, its folder kept for another try
    store = Path(settings.milvus_uri)
    _as_left_by_lite3(store)

    with DocLens(settings) as service:  # the old code refused to open the store
        assert (store.parent / f"{store.name}{old_folders.OLD_STORE_SUFFIX}" / "MANIFEST").read_bytes() == b"lite3"
        assert store.is_file() and service.list_kbs() == []
        service.load_all()  # what the app runs in the background at start
        assert {kb.name for kb in service.list_kbs()} == {"物理 Physics", "empty", "lost"}
        assert _documents(service, "物理 Physics") == before
        kb = service.open_kb("物理 Physics")
        assert kb.registry.summary(summarized.doc_id) == "kept summary"
        assert service.search("物理 Physics", "商业分析").sources
        assert [kb.name for kb in service.list_kbs() if kb.documents] == ["物理 Physics"]
        waiting = old_folders.waiting_folders(settings.data_dir)
        assert [p.name for p in waiting] == [service.open_kb("lost").collection]

    shutil.copy(PHYSICS, waiting[0] / "files" / lost_file.name)  # put back: the next run finishes the job
    with DocLens(settings) as service:
        [result] = service.migrate()
        assert (result.name, result.documents, result.indexed, result.failures) == ("lost", 1, 1, [])
        assert service.documents("lost")[0].file == PHYSICS.name
        assert not (settings.data_dir / old_folders.OLD_KBS).exists()
        assert service.migrate() == []
