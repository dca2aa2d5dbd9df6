"""The service facade: what the app does at start-up."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from backend.embedding import create_embedder
from backend.service import DocLens
from tests.conftest import make_settings


def test_models_are_prepared_in_the_background(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    with DocLens(settings) as service:
        service.prepare_models_in_background().join(timeout=300)
        assert service._embedder is create_embedder(settings)  # loaded, and the shared instance


def test_the_bilingual_term_list_is_loaded_at_start_not_by_the_first_question(tmp_path: Path) -> None:
    """Parsing CC-CEDICT takes seconds: it was the first cross-lingual question's cost after a restart."""
    from backend.retrieval import term_list

    term_list._terms = None  # as in a fresh process
    with DocLens(make_settings(tmp_path)) as service:
        service.prepare_models_in_background().join(timeout=300)
    assert term_list._terms is not None


def test_the_first_question_after_a_start_finds_the_question_path_warm(tmp_path: Path) -> None:
    """The first inference of a query's shape sets up OpenVINO's kernels (0.6 s of a 1.0 s first question at
    10k chunks) and the retrieval modules import on first use (0.2 s): both happen while the app starts."""
    with DocLens(make_settings(tmp_path)) as service:
        service.prepare_models_in_background().join(timeout=300)
        assert service._retriever is not None
        assert set(service._retriever.hubs._references) == {"zh", "en"}  # questions of both languages embedded
        runner = getattr(service._embedder, "runner", None)  # OpenVINO (CPUs with VNNI); ONNX Runtime elsewhere
        if hasattr(runner, "query_request"):  # OpenVINO's own request for questions (ONNX Runtime has none)
            assert runner.query_request.latency > 0  # the question's kernels were set up


def test_a_model_that_cannot_load_is_a_warning_not_a_crash(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    settings = make_settings(tmp_path, DOCLENS_EMBEDDING_MODEL="bundled:nope")
    with DocLens(settings) as service, caplog.at_level(logging.WARNING, logger="backend.service"):
        service.prepare_models_in_background().join(timeout=60)
        assert service._embedder is None
    assert "no such bundled model" in caplog.text


def test_an_upload_is_sealed_into_indexed_segments(tmp_path: Path) -> None:
    """Milvus Lite kept fresh rows in its write buffer (searched by brute force) until a restart or 128 MB:
    an upload now flushes them into a sealed segment on disk, which gets its indexes."""
    from tests.conftest import SAMPLES

    settings = make_settings(tmp_path)
    with DocLens(settings) as service:
        service.create_kb("papers")
        [result] = service.ingest("papers", [SAMPLES / "物理公式示例文档.pdf"])
        assert result.ok
        collection = service.open_kb("papers").collection
        store = Path(settings.milvus_uri)
        if store.is_dir():  # Lite 3.x; Lite 2.x keeps every row in its SQLite file and indexes them in memory
            sealed = (store / "collections" / collection).rglob("partitions/*/data/*.parquet")
            assert list(sealed), "rows still only in the write buffer"
        assert service.search("papers", "能量守恒").sources


def test_an_empty_knowledge_base_loads_at_start_without_a_failing_search(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The start's warm-up searches met Milvus's BM25 with no rows ("Invalid sparse row: NaN or Inf"), a
    logged RPC error on every start with a new, still empty knowledge base."""
    settings = make_settings(tmp_path)
    with DocLens(settings) as service:
        service.create_kb("empty")
    with DocLens(settings) as service, caplog.at_level(logging.INFO):
        service.load_all()
    assert "NaN" not in caplog.text and "RPC error" not in caplog.text
    assert "knowledge base 'empty' ready" in caplog.text
