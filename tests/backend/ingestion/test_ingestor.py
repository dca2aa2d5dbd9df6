"""Ingestion end to end through the ``DocLens`` facade: real PDFs, real Milvus Lite, real embeddings.

One service and store serve the module (the model loads once); each test uses its own knowledge base.
Limits are lowered so that real sample files can be "too big": max 5 pages, max 2 MB. Cancelling,
failures and crashes: tests/backend/ingestion/test_ingestor_failures.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from backend.service import DocLens
from backend.types import ProgressEvent
from tests.backend.documents.layout_fixtures import write_word_plot_pdf
from tests.backend.documents.pdf_fixtures import write_bad_inputs
from tests.backend.ingestion.support import (
    BUSINESS,
    COMPUTING,
    LAYOUT,
    PHYSICS,
    SCANNED_DOC,
    assert_consistent,
    blank_pdf,
    leftovers,
    open_kb,
    stored_doc_ids,
    variant,
)
from tests.conftest import BENCH, MODEL_CACHE, REPO_ROOT, make_settings


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


def test_a_plot_drawn_with_words_is_indexed_once_as_its_figure(service, kb, tmp_path):
    path = tmp_path / "tsne.pdf"
    _, vocabulary = write_word_plot_pdf(path, 3000)
    [result] = service.ingest(kb, [path])
    assert result.status == "indexed" and result.figures == 1
    rows = service.store.chunks(open_kb(service, kb).collection)
    [plot] = [r for r in rows if r.kind == "figure"]
    assert plot.content.startswith("Figure 3:") and plot.page == 1 and len(rows) <= 8
    assert not any(set(re.findall(r"[a-z]+", r.content)) & vocabulary for r in rows if r is not plot)
    [figure] = open_kb(service, kb).registry.figures()  # its words and the sentence about it are kept
    assert figure.context == "The figure below maps every word of the vocabulary." and figure.text in plot.content
    word = next(w for w in plot.content.split() if w in vocabulary)
    assert any(s.kind == "figure" for s in service.search(kb, word, top=5, mode="keyword").sources)


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
    assert all(Path(f["path"]).exists() for f in figures)  # in the trash: kept until it is emptied
    assert run_cli(["trash", "empty", "--yes"], data).returncode == 0
    assert not any(Path(f["path"]).exists() for f in figures)
