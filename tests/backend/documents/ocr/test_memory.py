"""OCR memory bounds (issue 11 item 8): the recogniser keeps only what the decoder reads, in slices of a
batch; detection runs one page at a time; freed native memory goes back to the system. The figures come
from ``python -m backend.quality.bench_hostile``; these tests pin the behaviour, not the bytes."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from backend.documents.ocr.engines import BestCharacters, OneAtATime, RapidOCREngine, RecognitionRuns
from tests.conftest import BENCH, REPO_ROOT
from tests.support.page_images import first_page

SCAN = BENCH / "dev-zh" / "docs" / "zh_011.pdf"  # a scanned page of Chinese text with long lines


@pytest.fixture(scope="module")
def page() -> np.ndarray:
    return np.asarray(first_page(SCAN, top=0.5))  # its top half: the test OCRs it twice


def test_recogniser_runs_in_slices_and_keeps_only_the_best_characters(page: np.ndarray) -> None:
    from rapidocr import RapidOCR

    # ONNX Runtime gives the same scores bit for bit in slices; OpenVINO's differ in the fourth decimal
    # (tests/backend/documents/ocr/test_runtime.py holds its text to ONNX Runtime's)
    engine = RapidOCREngine(runtime="onnxruntime")
    bounded = engine._load()
    recognizer = bounded._load_rec_model()
    assert isinstance(recognizer.session, RecognitionRuns)
    assert isinstance(bounded._load_det_model().session, OneAtATime)
    shapes: list[tuple] = []
    inner = recognizer.session.session
    recognizer.session.session = lambda batch: shapes.append(batch.shape) or inner(batch)
    try:
        ours = bounded(page)
    finally:
        recognizer.session.session = inner
    assert shapes and all(shape[0] * shape[3] <= max(recognizer.session.max_columns, shape[3]) for shape in shapes)
    assert any(shape[0] < 6 for shape in shapes)  # page-wide lines were split from rapidocr's batches of six
    plain = RapidOCR(params=engine._params)(page)  # rapidocr as shipped: whole batches, full scores
    assert list(ours.txts) == list(plain.txts) and len(ours.txts) > 10
    np.testing.assert_array_equal(np.asarray(ours.scores), np.asarray(plain.scores))


def test_reduced_scores_refuse_what_they_do_not_hold() -> None:
    best = BestCharacters(np.zeros((1, 3), dtype=np.int64), np.ones((1, 3), dtype=np.float32))
    assert best.argmax(axis=2).shape == (1, 3) and best.max(axis=-1).shape == (1, 3)
    with pytest.raises(TypeError, match="not axis 1"):
        best.max(axis=1)


def test_freed_native_memory_goes_back_to_the_system_after_ocr() -> None:
    """glibc raises its mmap threshold as large blocks are freed, so the activations of each page shape
    stayed in the heap; once bounded, a freed block of a few MB is unmapped (mallinfo2's mapped bytes)."""
    script = f"""
import ctypes, numpy as np, pypdfium2 as pdfium
from backend.documents.ocr import RapidOCREngine
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena ordblks smblks hblks hblkd usmblks fsmblks uordblks "
                                               "fordblks keepcost").split()]
libc = ctypes.CDLL("libc.so.6"); libc.mallinfo2.restype = Info
libc.malloc.restype = ctypes.c_void_p; libc.free.argtypes = [ctypes.c_void_p]
pdf = pdfium.PdfDocument({str(SCAN)!r})
RapidOCREngine().recognize(pdf[0].render(scale=100 / 72).to_pil())
before = libc.mallinfo2().hblkd
block = libc.malloc(4 << 20)
print(libc.mallinfo2().hblkd - before >= 4 << 20)
libc.free(block)
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "True"
