"""What the ingestion tests share: the sample files, one service per test module (limits lowered so that
real sample files can be "too big": max 5 pages, max 2 MB), a fresh knowledge base per test, and the
checks that a knowledge base holds complete documents only.

A test module imports the fixtures it uses.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from backend.service import DocLens
from tests.conftest import SAMPLES, make_settings

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


@pytest.fixture(scope="module")
def service_one_by_one(tmp_path_factory):
    """A service that embeds each document on its own (``ingest.embed_group_chunks: 1``), so that what
    happens between one file and the next can be watched file by file."""
    data = tmp_path_factory.mktemp("one-by-one") / "data"
    with DocLens(make_settings(data, DOCLENS_INGEST_EMBED_GROUP_CHUNKS="1", **LIMITS)) as svc:
        yield svc


def kb_name(request) -> str:
    return re.sub(r"[^a-z0-9]+", "_", request.node.name.lower())[:40]


@pytest.fixture
def kb(service, request) -> str:
    """A fresh knowledge base per test, named after it."""
    return service.create_kb(kb_name(request)).name


@pytest.fixture
def kb_one_by_one(service_one_by_one, request) -> str:
    return service_one_by_one.create_kb(kb_name(request)).name


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
