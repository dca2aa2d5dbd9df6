"""Ingestion end to end through the ``DocLens`` facade: real PDFs, real Milvus Lite, real embeddings.

One service and store serve the module (the model loads once); each test uses its own knowledge base.
Limits are lowered so that real sample files can be "too big": max 5 pages, max 2 MB.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from backend.service import DocLens
from backend.types import ProgressEvent
from tests.backend.documents.pdf_fixtures import write_bad_inputs
from tests.conftest import BENCH, MODEL_CACHE, REPO_ROOT, SAMPLES, make_settings

PHYSICS = SAMPLES / "物理公式示例文档.pdf"
BUSINESS = SAMPLES / "商业分析示例文档.pdf"
COMPUTING = SAMPLES / "计算机科学示例文档.pdf"
LAYOUT = SAMPLES / "layout"
SCANNED_DOC = "zh_011.pdf"  # a 2-page scan of the Chinese bench
LIMITS = {"DOCLENS_INGEST_MAX_PAGES": "5", "DOCLENS_INGEST_MAX_FILE_MB": "2"}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("ingest") / "data"


@pytest.fixture(scope="module")
def service(data_dir):
    with DocLens(make_settings(data_dir, **LIMITS)) as svc:
        yield svc


@pytest.fixture
def kb(service, request) -> str:
    """A fresh knowledge base per test, named after it."""
    name = re.sub(r"[^a-z0-9]+", "_", request.node.name.lower())[:40]
    service.create_kb(name)
    return name


def variant(source: Path, folder: Path, tag: str) -> Path:
    """The same PDF with a comment after %%EOF: identical text, different SHA-256."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{source.stem}-{hashlib.sha1(tag.encode()).hexdigest()[:8]}.pdf"
    target.write_bytes(source.read_bytes() + f"\n% variant {tag}\n".encode())
    return target


def blank_pdf(path: Path) -> Path:
    """A valid one-page PDF with nothing on it: passes the checks, fails only after parsing."""
    pdf = pdfium.PdfDocument.new()
    pdf.new_page(300, 300)
    pdf.save(str(path))
    pdf.close()
    return path


def open_kb(service: DocLens, kb: str):
    return service.open_kb(kb, check_model=False)


def stored_doc_ids(service: DocLens, kb: str) -> set[str]:
    return {row.doc_id for row in service.store.chunks(open_kb(service, kb).collection)}


def leftovers(service: DocLens, kb: str) -> dict[str, set[str]]:
    """Per-document folders and kept originals on disk."""
    folder = open_kb(service, kb).folder
    return {
        "figures": {p.name for p in (folder / "figures").glob("*")},
        "previews": {p.name for p in (folder / "previews").glob("*")},
        "files": {p.stem for p in (folder / "files").glob("*")},
    }


def assert_consistent(service: DocLens, kb: str) -> None:
    """Rows, registry entries, figure folders and kept files all belong to complete documents only."""
    opened = open_kb(service, kb)
    docs = opened.registry.documents()
    complete = {d.doc_id for d in docs if d.status == "complete"}
    assert {d.doc_id for d in docs} == complete, "pending documents left behind"
    assert service.store.count(opened.collection) == sum(d.chunks for d in docs)
    assert stored_doc_ids(service, kb) == complete
    disk = leftovers(service, kb)
    assert disk["figures"] <= complete and disk["previews"] <= complete
    assert disk["files"] == complete
    figure_docs = {f.doc_id for f in opened.registry.figures(complete_only=False)}
    assert figure_docs <= complete


# ------------------------------------------------------------------------------------ happy path


def test_file_and_folder_ingest(service, kb, data_dir, tmp_path):
    events: list[ProgressEvent] = []
    first = service.ingest(kb, [PHYSICS], progress=events.append)
    assert [r.status for r in first] == ["indexed"]
    assert first[0].pages == 2 and first[0].chunks > 0 and first[0].figures > 0 and first[0].error is None

    folder = tmp_path / "upload"
    (folder / "nested" / "deeper").mkdir(parents=True)
    (folder / BUSINESS.name).write_bytes(BUSINESS.read_bytes())
    (folder / "nested" / "deeper" / COMPUTING.name).write_bytes(COMPUTING.read_bytes())
    (folder / "nested" / "readme.txt").write_text("not a PDF", encoding="utf-8")
    second = service.ingest(kb, [folder])
    assert sorted(r.file for r in second) == sorted([BUSINESS.name, COMPUTING.name])  # the .txt is ignored
    assert all(r.status == "indexed" and r.pages == 2 and r.chunks > 0 for r in second)

    docs = service.documents(kb)
    assert sorted(d.file for d in docs) == sorted([PHYSICS.name, BUSINESS.name, COMPUTING.name])
    assert all(d.status == "complete" and d.pages == 2 for d in docs)
    by_file = {d.file: d for d in docs}
    assert by_file[PHYSICS.name].chunks == first[0].chunks

    rows = service.store.chunks(open_kb(service, kb).collection, doc_id=by_file[PHYSICS.name].doc_id)
    assert len(rows) == first[0].chunks
    assert all(1 <= r.page <= r.page_end <= 2 for r in rows)
    assert {p for r in rows for p in range(r.page, r.page_end + 1)} == {1, 2}  # every page is in a chunk
    assert all(r.filename == PHYSICS.name for r in rows)
    assert all(r.lang == "zh" for r in rows)  # the language is stored with every chunk

    figures = service.figures(kb)
    assert len(figures) == sum(d.figures for d in docs) > 0
    for figure in figures:
        path = Path(figure.path)
        assert path.is_file() and path.suffix == ".png" and path.resolve().is_relative_to(data_dir.resolve())
        assert figure.page in (1, 2) and figure.file in by_file
    assert {f.file for f in service.figures(kb, PHYSICS.name)} == {PHYSICS.name}
    assert_consistent(service, kb)

    stages = [e.stage for e in events]
    assert {"file", "parse", "embed", "store", "done"} <= set(stages)
    assert stages[0] == "file" and stages[-1] == "done"
    fractions = [e.fraction for e in events]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0


def test_duplicate_and_replace(service, kb, tmp_path):
    original = service.ingest(kb, [PHYSICS], display_names=["report.pdf"])[0]
    assert original.status == "indexed"
    old = service.documents(kb)[0]
    count = service.store.count(open_kb(service, kb).collection)

    again = service.ingest(kb, [PHYSICS, PHYSICS], display_names=["report.pdf", "copy of report.pdf"])
    assert [r.status for r in again] == ["duplicate", "duplicate"]
    assert "already indexed" in again[0].error and "report.pdf" in again[0].error
    assert again[1].error.startswith("copy of report.pdf:") and "as report.pdf" in again[1].error
    assert service.store.count(open_kb(service, kb).collection) == count
    assert [d.file for d in service.documents(kb)] == ["report.pdf"]

    replaced = service.ingest(kb, [BUSINESS], display_names=["report.pdf"])[0]
    assert replaced.status == "replaced" and replaced.chunks > 0
    docs = service.documents(kb)
    assert len(docs) == 1 and docs[0].doc_id != old.doc_id and docs[0].status == "complete"
    assert old.doc_id not in stored_doc_ids(service, kb)
    assert all(f.doc_id == docs[0].doc_id for f in service.figures(kb))
    assert old.doc_id not in set().union(*leftovers(service, kb).values())
    assert_consistent(service, kb)


# ----------------------------------------------------------------------------------- bad inputs


def test_bad_inputs_fail_alone(service, kb, tmp_path):
    bad = write_bad_inputs(tmp_path / "bad", PHYSICS)
    bad["too_many_pages"] = LAYOUT / "native_zh_en_20p.pdf"  # 20 pages, limit 5
    bad["too_big"] = LAYOUT / "scanned_zh_en_20p.pdf"  # ~4 MB, limit 2 MB
    bad["blank"] = blank_pdf(tmp_path / "bad" / "blank.pdf")  # valid, but no text: fails after parsing
    temp_upload = tmp_path / "tmpx81kq2.pdf"  # the UI uploads temp files under the user's name
    temp_upload.write_text("plain text", encoding="utf-8")
    results = service.ingest(
        kb,
        [temp_upload, *bad.values(), COMPUTING],
        display_names=["my upload.pdf", *(p.name for p in bad.values()), COMPUTING.name],
    )
    assert results[0].status == "failed" and results[0].error == "my upload.pdf: not a PDF (it looks like plain text)"
    by_file = {r.file: r for r in results}
    assert by_file[COMPUTING.name].status == "indexed"
    reasons = {
        "empty": "empty",
        "text": "not a PDF",
        "png": "PNG",
        "docx": "ZIP",
        "truncated": "truncated",
        "encrypted": "password",
        "too_many_pages": "over the limit of 5 pages",
        "too_big": "MB limit",
        "blank": "no text",
    }
    for kind, path in bad.items():
        result = by_file[path.name]
        assert result.status == "failed", (kind, result)
        assert "\n" not in result.error and result.error.startswith(path.name), result.error
        assert reasons[kind] in result.error, (kind, result.error)
    docs = service.documents(kb)
    assert [d.file for d in docs] == [COMPUTING.name]
    assert_consistent(service, kb)


# ------------------------------------------------------------------------------------ odd names

ODD_NAMES = [
    "he said \"hi\" & 'bye'.pdf",
    "../../../etc/evil.pdf",
    "📚 reading 笔记 🚀.pdf",
    "n" * 196 + ".pdf",
    "C:\\Users\\me\\back slash.pdf",
]


def test_odd_file_names(service, kb, data_dir, tmp_path):
    before = {p for p in data_dir.rglob("*") if p.is_file()}
    paths = [variant(PHYSICS, tmp_path / "odd", name) for name in ODD_NAMES]
    results = service.ingest(kb, paths, display_names=ODD_NAMES)
    assert [r.status for r in results] == ["indexed"] * len(ODD_NAMES), [r.error for r in results]
    stored = [r.file for r in results]
    assert stored == [ODD_NAMES[0], "evil.pdf", ODD_NAMES[2], ODD_NAMES[3], ODD_NAMES[4]]  # "\\" is a character
    assert sorted(d.file for d in service.documents(kb)) == sorted(stored)

    kb_folder = open_kb(service, kb).folder.resolve()
    new_files = {p for p in data_dir.rglob("*") if p.is_file()} - before
    outside = [
        p
        for p in new_files
        if not p.resolve().is_relative_to(kb_folder)
        and not p.resolve().is_relative_to((data_dir / "milvus.db").resolve())
        and not p.resolve().is_relative_to((data_dir / "cache").resolve())
    ]
    assert outside == []
    assert not any("evil" in p.name or "📚" in p.name or "said" in p.name for p in new_files)
    assert not (tmp_path / "etc").exists() and not (data_dir.parent / "etc").exists()

    for name in stored:
        result = service.search(kb, "物理公式", doc=name)
        assert result.sources and {s.file for s in result.sources} == {name}
    assert service.delete_document(kb, ODD_NAMES[1]).file == "evil.pdf"  # the name as given also works
    for name in (ODD_NAMES[0], ODD_NAMES[2], ODD_NAMES[3]):
        service.delete_document(kb, name)
    assert [d.file for d in service.documents(kb)] == [ODD_NAMES[4]]
    assert_consistent(service, kb)


# ------------------------------------------------------------------------- cancel and failures


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


def test_next_file_is_read_while_the_current_one_is_embedded(service, kb):
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
def test_a_scanned_file_waits_for_its_turn_to_ocr(service, kb):
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


# ---------------------------------------------------------------------------------- crash (kill -9)

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
    child = subprocess.Popen(
        [sys.executable, "-c", _CRASH_DRIVER, str(data), str(pdf), str(marker)],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 300
        while not marker.exists():
            assert child.poll() is None, child.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the driver never reached the store stage"
            time.sleep(0.2)
        registries = list((data / "kbs").glob("*/registry.sqlite3"))
        with sqlite3.connect(registries[0]) as db:
            assert db.execute("SELECT status FROM documents").fetchall() == [("pending",)]
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stderr.close()

    with DocLens(make_settings(data)) as service:  # start-up runs recover()
        assert service.documents("crash") == []
        assert service.store.count(open_kb(service, "crash").collection) == 0
        assert leftovers(service, "crash") == {"figures": set(), "previews": set(), "files": set()}
        again = service.ingest("crash", [pdf])
        assert again[0].status == "indexed" and again[0].pages == 20 and again[0].figures >= 3
        assert_consistent(service, "crash")


# ------------------------------------------------------------------------------------- scanned


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


@pytest.mark.slow
def test_scanned_document_is_ocred_and_searchable(service, kb):
    events: list[ProgressEvent] = []
    result = service.ingest(kb, [BENCH / "dev-zh" / "docs" / SCANNED_DOC], progress=events.append)[0]
    assert result.status == "indexed" and result.ocr_pages == result.pages == 2 and result.figures == 0
    assert "ocr" in {e.stage for e in events}
    questions = [json.loads(line) for line in (BENCH / "dev-zh" / "qa.jsonl").read_text(encoding="utf-8").splitlines()]
    mine = [q for q in questions if q["doc"] == SCANNED_DOC][:10]
    found = 0
    for question in mine:
        sources = service.search(kb, question["question"], top=5).sources
        found += any(_squash(a) in _squash(s.text) for a in question["answers"] for s in sources)
    assert found >= 7, f"{found} of {len(mine)} answers found in the top 5"


# ------------------------------------------------------------------------------------------ CLI


def run_cli(args: list[str], data_dir: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "DOCLENS_DATA_DIR": str(data_dir), "DOCLENS_EMBEDDING_CACHE_DIR": str(MODEL_CACHE)}
    return subprocess.run(
        [sys.executable, str(REPO_ROOT / "main.py"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=REPO_ROOT,
    )


def test_cli_ingest_docs_figures_rm(tmp_path):
    data = tmp_path / "data"
    with DocLens(make_settings(data)) as service:  # creating the KB here saves one model load
        service.create_kb("cli")
    bad = write_bad_inputs(tmp_path / "bad", PHYSICS)["text"]

    first = run_cli(["ingest", "--kb", "cli", str(PHYSICS), str(bad), "--json"], data)
    assert first.returncode == 1, first.stderr
    results = json.loads(first.stdout)
    keys = {"file", "status", "pages", "ocr_pages", "chunks", "figures", "seconds", "error"}
    assert all(set(r) == keys for r in results)
    assert [(r["file"], r["status"]) for r in results] == [(PHYSICS.name, "indexed"), (bad.name, "failed")]
    assert results[0]["pages"] == 2 and results[0]["figures"] > 0 and results[0]["error"] is None
    assert bad.name in results[1]["error"]

    second = run_cli(["ingest", "--kb", "cli", str(PHYSICS), "--json"], data)
    assert second.returncode == 0, second.stderr
    assert [r["status"] for r in json.loads(second.stdout)] == ["duplicate"]

    docs = json.loads(run_cli(["docs", "--kb", "cli", "--json"], data).stdout)
    assert [(d["file"], d["status"], d["pages"]) for d in docs] == [(PHYSICS.name, "complete", 2)]
    figures = json.loads(run_cli(["figures", "--kb", "cli", "--json"], data).stdout)
    assert figures and all(set(f) == {"id", "file", "page", "path", "caption"} for f in figures)
    assert all(Path(f["path"]).is_file() and f["file"] == PHYSICS.name for f in figures)

    removed = run_cli(["rm", "--kb", "cli", PHYSICS.name], data)
    assert removed.returncode == 0 and PHYSICS.name in removed.stdout
    assert json.loads(run_cli(["docs", "--kb", "cli", "--json"], data).stdout) == []
    assert not any(Path(f["path"]).exists() for f in figures)
