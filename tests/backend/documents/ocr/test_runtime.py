"""rapidocr's bundled models on OpenVINO (backend/documents/ocr/runtime.py): the same text as on ONNX Runtime,
pages read side by side on threads of their own."""

from __future__ import annotations

import difflib
from concurrent.futures import ThreadPoolExecutor

import pytest

from backend.documents.ocr import RapidOCREngine
from backend.documents.ocr.runtime import PerThreadRequests, runtime_params
from tests.conftest import BENCH
from tests.support.page_images import first_page

SCANS = [BENCH / "dev-zh" / "docs" / "zh_011.pdf", BENCH / "dev-en" / "docs" / "en_003.pdf"]


@pytest.fixture(scope="module")
def pages() -> list:
    """The top of the first page of two scans, one Chinese and one English."""
    return [first_page(path, top=1 / 3) for path in SCANS]  # a third: the same lines, 3x sooner


def test_auto_runs_the_bundled_models_on_openvino() -> None:
    params = runtime_params("auto")
    assert params["Rec.model_path"].endswith(".onnx") and params["Det.model_path"].endswith(".onnx")
    assert runtime_params("onnxruntime") == {}


def test_openvino_reads_what_onnx_runtime_reads_and_pages_side_by_side(pages) -> None:
    """3x as fast (docs/benchmarks.md, Ingest speed); the text must not change with it."""
    fast, plain = RapidOCREngine(runtime="openvino"), RapidOCREngine(runtime="onnxruntime")
    expected = [plain.recognize(page) for page in pages]
    alone = [fast.recognize(page) for page in pages]
    for ours, theirs in zip(alone, expected):
        assert len(ours) > 200 and difflib.SequenceMatcher(None, ours, theirs).ratio() > 0.99
    assert isinstance(fast._load()._load_rec_model().session.session.session, PerThreadRequests)
    with ThreadPoolExecutor(2) as pool:  # each OCR thread on a request of its own
        together = list(pool.map(fast.recognize, pages * 2))
    assert together == alone * 2
