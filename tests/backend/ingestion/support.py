"""What the ingestion tests share besides their fixtures (conftest.py): the sample files, the lowered
limits, variants of a file, and the checks that a knowledge base holds complete documents only."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pypdfium2 as pdfium

from backend.service import DocLens
from tests.conftest import SAMPLES
from tests.support.text_pdf import write_text_pdf

PHYSICS = SAMPLES / "物理公式示例文档.pdf"
BUSINESS = SAMPLES / "商业分析示例文档.pdf"
COMPUTING = SAMPLES / "计算机科学示例文档.pdf"
LAYOUT = SAMPLES / "layout"
SCANNED_DOC = "zh_011.pdf"  # a 2-page scan of the Chinese bench
LIMITS = {"DOCLENS_INGEST_MAX_PAGES": "5", "DOCLENS_INGEST_MAX_FILE_MB": "2"}


def kb_name(request) -> str:
    return re.sub(r"[^a-z0-9]+", "_", request.node.name.lower())[:40]


def variant(source: Path, folder: Path, tag: str) -> Path:
    """The same PDF with a comment after %%EOF: identical text, different SHA-256."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{source.stem}-{hashlib.sha1(tag.encode()).hexdigest()[:8]}.pdf"
    target.write_bytes(source.read_bytes() + f"\n% variant {tag}\n".encode())
    return target


def one_page(folder: Path, word: str) -> Path:
    """A small PDF of its own content: a different word, a different file."""
    folder.mkdir(parents=True, exist_ok=True)
    return write_text_pdf(folder / f"{word}.pdf", [[f"DocLens {word} sample: a page about {word} rock."]])


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
    """Rows, registry entries, figure folders and kept files all belong to complete documents only (or
    to documents in the trash, which keep theirs until purged)."""
    opened = open_kb(service, kb)
    docs = opened.registry.documents() + opened.registry.documents(status="trashed")
    complete = {d.doc_id for d in docs if d.status in ("complete", "trashed")}
    assert {d.doc_id for d in docs} == complete, "pending documents left behind"
    assert service.store.count(opened.collection) == sum(d.chunks for d in docs)
    assert stored_doc_ids(service, kb) == complete
    disk = leftovers(service, kb)
    assert disk["figures"] <= complete and disk["previews"] <= complete
    assert disk["files"] == complete
    figure_docs = {f.doc_id for f in opened.registry.figures(complete_only=False)}
    assert figure_docs <= complete
