"""bench-load on a tiny bench-search library: a real `main.py serve`, sessions through gradio_client, the
bench's streaming model server, and an upload beside them (figures are printed by the bench, never asserted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.errors import DocLensError
from backend.quality.bench_load import UPLOAD_KB, kb_counts, run, table
from backend.quality.bench_search import KB_NAME, build_kb, engine_tag
from tests.backend.quality.test_bench_search import tiny_base
from tests.conftest import make_settings
from tests.support.text_pdf import write_text_pdf

pytestmark = pytest.mark.slow


def test_sessions_ask_beside_an_upload_and_the_library_is_left_as_it_was(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("DOCLENS_CONFIDENCE_ABSTAIN_BELOW", "0")  # random vectors: the model answers all the same
    settings = make_settings(tmp_path / "data")
    pdf = write_text_pdf(tmp_path / "beside.pdf", [["The Verity lighthouse was first lit in 1871 by Ada Quill."]])
    with pytest.raises(DocLensError, match="bench-search --chunks 150"):
        run(settings, 150, 2, 2, [pdf])  # no library of that size yet: says how to build it
    folder = settings.data_dir / "bench-search" / engine_tag(settings) / "lite-150"
    build_kb(make_settings(folder), tiny_base(), 150)
    (folder / "complete").write_text("built\n")

    report = run(settings, 150, users=2, questions=2, upload=[pdf], concurrency=2)

    assert report["errors"] == 0 and report["answered"] == 4 and not report["abstained"], report["error_examples"]
    # each question streamed: the sources first, then the model's words, then the whole answer
    assert 0 < report["sources"]["p50_s"] < report["first_token"]["p50_s"] < report["answer"]["p50_s"]
    assert report["model_requests"] >= 5  # the warm-up and the four questions, each answered by the model
    assert report["uploaded"] == {"statuses": ["indexed"], "indexed_once": True, "documents": 1}
    assert report["library_unchanged"]
    assert list(kb_counts(settings, folder)) == [KB_NAME]  # the upload's knowledge base is gone again
    assert UPLOAD_KB not in table(report) and "| to the sources |" in table(report)
