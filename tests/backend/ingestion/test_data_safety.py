"""Issue 11, data safety and bounded resources, end to end through ``DocLens``: real Milvus Lite, real
embeddings, real PDFs (the hostile ones written by backend/quality/hostile_pdfs.py)."""

from __future__ import annotations

import hashlib
import re
import threading
from pathlib import Path

import pytest

from backend.documents.chunking import chunk_pages
from backend.documents.pdf import parse_pdf
from backend.errors import KnowledgeBaseError
from backend.knowledge_bases.names import MAX_NAME_BYTES, clean_file_name
from backend.quality import hostile_pdfs
from backend.service import DocLens
from backend.types import ProgressEvent
from tests.backend.ingestion.support import (
    BUSINESS,
    COMPUTING,
    LAYOUT,
    PHYSICS,
    assert_consistent,
    one_page,
    variant,
)
from tests.conftest import make_settings
from tests.support.fake_openai import FakeOpenAI

NATIVE_20P = LAYOUT / "native_zh_en_20p.pdf"


@pytest.fixture(scope="module")
def service_env() -> dict[str, str]:
    """The configured limits, not the lowered ones of the other ingestion tests."""
    return {}


# --------------------------------------------------------------------------- names (items 4, 5)


def test_long_names_sharing_their_first_240_bytes_stay_two_documents(service, kb, tmp_path):
    common = "Proceedings of the symposium on " * 10  # 320 bytes in common
    names = [common + "basalt.pdf", common + "granite.pdf"]
    results = service.ingest(kb, [PHYSICS, BUSINESS], display_names=names)
    assert [r.status for r in results] == ["indexed", "indexed"], [r.error for r in results]
    stored = [r.file for r in results]
    assert stored[0] != stored[1]
    assert all(len(name.encode("utf-8")) <= MAX_NAME_BYTES and name.endswith(".pdf") for name in stored)
    assert all(name.startswith(common[:100]) for name in stored)  # still recognisable
    assert sorted(d.file for d in service.documents(kb)) == sorted(stored)
    again = service.ingest(kb, [variant(PHYSICS, tmp_path, "v2")], display_names=names[:1])[0]
    assert again.status == "replaced" and again.file == stored[0]  # the same long name is the same document
    assert service.delete_document(kb, names[1]).file == stored[1]  # found by the name the user knows
    assert [d.file for d in service.documents(kb)] == [stored[0]]
    assert_consistent(service, kb)


def test_clean_file_name_keeps_names_whole_and_distinct():
    assert clean_file_name("old\\report.pdf") == "old\\report.pdf"
    assert clean_file_name("C:\\Users\\me\\back slash.pdf") == "C:\\Users\\me\\back slash.pdf"
    assert clean_file_name("../../etc/evil.pdf") == "evil.pdf"
    long_a, long_b = "数" * 100 + "a.pdf", "数" * 100 + "b.pdf"  # 300 bytes each
    short_a, short_b = clean_file_name(long_a), clean_file_name(long_b)
    assert short_a != short_b and short_a == clean_file_name(long_a)
    assert len(short_a.encode("utf-8")) <= MAX_NAME_BYTES and short_a.endswith(".pdf")
    assert hashlib.sha256(long_a.encode()).hexdigest()[:12] in short_a


def test_a_backslash_is_part_of_the_name_not_a_folder(service, kb):
    first = service.ingest(kb, [PHYSICS], display_names=["report.pdf"])[0]
    second = service.ingest(kb, [BUSINESS], display_names=["old\\report.pdf"])[0]
    assert (first.status, second.status) == ("indexed", "indexed"), second.error
    assert second.file == "old\\report.pdf"
    assert sorted(d.file for d in service.documents(kb)) == ["old\\report.pdf", "report.pdf"]
    assert {s.file for s in service.search(kb, "物理公式", doc="report.pdf").sources} == {"report.pdf"}
    assert_consistent(service, kb)


def test_two_different_files_of_one_name_in_one_upload_are_both_kept(service, kb, tmp_path):
    """Issue 31 item 3: 2023/report.pdf and 2024/report.pdf of a folder arrive as report.pdf twice. The
    second is not an update of the first: it is kept as "report (2).pdf" and says why."""
    files = [one_page(tmp_path, word) for word in ("basalt", "granite", "gabbro")]
    results = service.ingest(kb, files, display_names=["report.pdf"] * 3)
    assert [(r.status, r.file) for r in results] == [
        ("indexed", "report.pdf"),
        ("indexed", "report (2).pdf"),
        ("indexed", "report (3).pdf"),
    ], [r.error for r in results]
    assert results[0].error is None
    assert results[1].error.startswith("report (2).pdf: another file of this upload is called 'report.pdf' too")
    assert sorted(d.file for d in service.documents(kb)) == ["report (2).pdf", "report (3).pdf", "report.pdf"]
    assert_consistent(service, kb)


def test_a_changed_file_replaces_its_name_unless_the_name_may_be_cut(service, kb, tmp_path):
    """The rule (backend/ingestion/uploads.py): a different file under a stored name is its update and
    replaces it, except for a name gradio_client may have cut to 200 bytes: then both are kept."""
    basalt, granite, gabbro, diorite = (one_page(tmp_path, w) for w in ("basalt", "granite", "gabbro", "diorite"))
    assert service.ingest(kb, [basalt], display_names=["notes.pdf"])[0].status == "indexed"
    updated = service.ingest(kb, [granite], display_names=["notes.pdf"])[0]
    assert (updated.status, updated.file) == ("replaced", "notes.pdf"), updated.error
    cut = "数据" * 32 + "x" * 4 + ".pdf"  # 200 bytes, as gradio_client leaves a longer name
    assert len(cut.encode()) == 200
    assert service.ingest(kb, [gabbro], display_names=[cut])[0].status == "indexed"
    second = service.ingest(kb, [diorite], display_names=[cut])[0]
    assert (second.status, second.file) == ("indexed", cut[: -len(".pdf")] + " (2).pdf"), second.error
    assert f"already indexed as '{cut}'" in second.error and "200 bytes" in second.error
    assert sorted(d.file for d in service.documents(kb)) == sorted(["notes.pdf", cut, second.file])
    assert_consistent(service, kb)


# ------------------------------------------------------------------- same name at once (item 6)


def test_concurrent_uploads_of_one_name_are_serialised_and_the_replacement_is_told(service, kb):
    barrier = threading.Barrier(2)
    results: dict[str, object] = {}

    def upload(path: Path) -> None:
        barrier.wait()
        results[path.name] = service.ingest(kb, [path], display_names=["report.pdf"])[0]

    threads = [threading.Thread(target=upload, args=(path,)) for path in (PHYSICS, COMPUTING)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    outcomes = sorted((r.status, r.error or "") for r in results.values())
    assert [status for status, _ in outcomes] == ["indexed", "replaced"], outcomes
    note = outcomes[1][1]
    assert note.startswith("report.pdf: replaced report.pdf") and "a different file" in note, note
    docs = service.documents(kb)
    assert [d.file for d in docs] == ["report.pdf"] and docs[0].status == "complete"
    winner = next(r for r in results.values() if r.status == "replaced")
    assert docs[0].chunks == winner.chunks
    assert_consistent(service, kb)


# ------------------------------------------------------------------ delete while in use (item 7)


def test_deleting_a_kb_during_an_upload_stops_it_and_leaves_nothing(service, kb, data_dir):
    collection = service.open_kb(kb, check_model=False).collection
    deleter: list[threading.Thread] = []
    deleted: list[BaseException] = []

    def delete() -> None:
        try:
            service.delete_kb(kb)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            deleted.append(exc)

    def progress(event: ProgressEvent) -> None:
        if event.stage == "parse" and not deleter:  # a user deletes the KB in another tab
            deleter.append(threading.Thread(target=delete))
            deleter[0].start()

    results = service.ingest(kb, [PHYSICS, BUSINESS, COMPUTING], progress=progress)
    deleter[0].join(timeout=60)
    assert not deleted, deleted
    assert [r.status for r in results] == ["failed"] * 3, results
    for result in results:
        assert result.error == f"{result.file}: not added: the knowledge base '{kb}' was deleted", result.error
    assert kb not in [k.name for k in service.list_kbs()]
    assert not (data_dir / "kbs" / collection).exists()
    assert not service.store.has_collection(collection)
    service.create_kb(kb)  # the name is free again, and starts empty
    assert service.documents(kb) == []
    service.delete_kb(kb)
    assert not (data_dir / "kbs" / collection).exists()


def test_an_upload_waiting_for_a_deleted_kb_says_so(service, kb):
    opened = service.open_kb(kb)
    service.delete_kb(kb)
    from backend.ingestion.ingestor import Ingestor, collect_uploads

    with pytest.raises(KnowledgeBaseError, match=f"the knowledge base '{kb}' was deleted"):
        with service.kbs.writing(opened):
            Ingestor(service.settings, service.embedder).run(opened, collect_uploads([PHYSICS]))
    assert not opened.folder.exists()


def test_deleting_a_kb_during_a_question_says_it_was_deleted(data_dir, tmp_path):
    armed, asked, go_on = threading.Event(), threading.Event(), threading.Event()

    def translate(_body) -> str:  # the query translation runs before the store is searched
        if armed.is_set():  # not the ingest's formula reading (it asks the same model): each waited 30 s
            asked.set()
            go_on.wait(timeout=30)
        return "简谐振子的能级公式"

    with (
        FakeOpenAI(reply=translate) as fake,
        DocLens(
            make_settings(
                tmp_path / "data",
                DOCLENS_LLM_BASE_URL=fake.base_url,
                DOCLENS_LLM_MODEL="fake-chat",
                DOCLENS_LLM_QPS="50",
                DOCLENS_RETRIEVAL_QUERY_EXPANSION="true",
            )
        ) as service,
    ):
        service.create_kb("asked")
        assert service.ingest("asked", [PHYSICS])[0].status == "indexed"
        collection = service.open_kb("asked").collection
        armed.set()
        failure: list[BaseException] = []

        def ask() -> None:
            try:
                # English over a Chinese document: translated (a library of one language would not be)
                service.search("asked", "What is the energy level formula of the harmonic oscillator?")
            except BaseException as exc:  # noqa: BLE001
                failure.append(exc)

        thread = threading.Thread(target=ask)
        thread.start()
        assert asked.wait(timeout=60)
        service.delete_kb("asked")
        go_on.set()
        thread.join(timeout=60)
        assert len(failure) == 1 and isinstance(failure[0], KnowledgeBaseError), failure
        assert str(failure[0]) == "the knowledge base 'asked' was deleted"
        assert not (tmp_path / "data" / "kbs" / collection).exists()


# ------------------------------------------------------------------ bounded resources (items 8, 13)


def test_more_chunks_than_allowed_is_refused_and_nothing_is_stored(service, kb, monkeypatch):
    ingest = service.settings.ingest
    chunks = len(
        chunk_pages(
            [p.to_page_text() for p in parse_pdf(NATIVE_20P, service.settings)], ingest.chunk_size, ingest.chunk_overlap
        )
    )
    assert chunks > 10
    for limit, reason in (
        (chunks - 1, f"{chunks:,} chunks: more than ingest.max_chunks ({chunks - 1:,})"),
        (2, "the text fills more than 2 chunks: more than ingest.max_chunks"),
    ):
        monkeypatch.setattr(ingest, "max_chunks", limit)
        result = service.ingest(kb, [NATIVE_20P])[0]
        assert result.status == "failed" and result.error.startswith(f"{NATIVE_20P.name}: "), result
        assert reason in result.error, result.error
        assert service.documents(kb) == []
        assert_consistent(service, kb)
    if "by page" in result.error:  # refused while parsing, at the page where the budget ran out
        assert int(re.search(r"by page (\d+)", result.error).group(1)) < 20


def test_hostile_files_fail_with_named_errors_and_others_are_read(service, kb, tmp_path):
    files = {
        "huge_page": hostile_pdfs.huge_page(tmp_path / "huge_page.pdf"),
        "long_line": hostile_pdfs.long_line(tmp_path / "long_line.pdf", 400_000),
        "bomb": hostile_pdfs.compression_bomb(tmp_path / "bomb.pdf", 160),
        "cycle": hostile_pdfs.page_cycle(tmp_path / "cycle.pdf"),
        "junk": hostile_pdfs.trailing_junk(tmp_path / "junk.pdf", seed=b"0123456789abcdef" * 2),
        "cut": hostile_pdfs.long_text_object(tmp_path / "cut.pdf")[0],
    }
    results = {r.file: r for r in service.ingest(kb, list(files.values()))}
    expected_failures = {
        "huge_page": "page 1 is 5.1 m wide: larger than ingest.max_page_mm (1200 mm)",
        "long_line": "more than ingest.max_page_chars",
        "bomb": "unpacks to more than 100 MB: larger than ingest.max_stream_mb",
    }
    for kind, reason in expected_failures.items():
        result = results[files[kind].name]
        assert result.status == "failed" and result.error.startswith(files[kind].name + ": "), result
        assert reason in result.error and "\n" not in result.error, result.error
    cycle = results[files["cycle"].name]
    assert cycle.status == "indexed" and cycle.pages == 3, cycle
    assert "page(s) 3 could not be read" in cycle.error and "the other pages are indexed" in cycle.error
    assert results[files["junk"].name].status == "indexed", results[files["junk"].name]
    cut = results[files["cut"].name]
    assert cut.status == "indexed" and "was cut by pdfium" in cut.error, cut
    assert sorted(d.file for d in service.documents(kb)) == sorted(files[k].name for k in ("cycle", "junk", "cut"))
    assert_consistent(service, kb)
