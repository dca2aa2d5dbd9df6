"""bench-ingest --stages on real PDFs: every stage timed, the ceilings measured, the OCR scored."""

from __future__ import annotations

from backend.quality.bench_ingest import benchmark_ingest
from backend.quality.bench_stages import find_twins, ocr_cer
from backend.stage_times import STAGES
from tests.conftest import SAMPLES

LAYOUT = SAMPLES / "layout"
MIXED = LAYOUT / "mixed_native_scanned_20p.pdf"  # pages 4 and 12 scanned
NATIVE = LAYOUT / "native_zh_en_20p.pdf"


def test_a_scan_is_paired_with_the_native_file_of_its_name_or_the_one_given():
    twins = find_twins([LAYOUT / "scanned_zh_en_20p.pdf", MIXED], [f"{MIXED}={NATIVE}"])
    assert twins == {LAYOUT / "scanned_zh_en_20p.pdf": NATIVE, MIXED: NATIVE}
    assert find_twins([NATIVE]) == {}


def test_the_character_error_rate_is_per_page_and_over_all_pages():
    texts = {(MIXED, 3): "x", (MIXED, 11): "y", (LAYOUT / "other.pdf", 0): "z"}
    cer = ocr_cer(texts, {MIXED: NATIVE})
    assert cer is not None and set(cer["pages"]) == {
        "mixed_native_scanned_20p.pdf p4",
        "mixed_native_scanned_20p.pdf p12",
    }
    assert 0.9 < cer["all"] <= 1.0  # one character against whole pages
    assert ocr_cer(texts, {}) is None


def test_stages_are_timed_against_the_ceilings_measured_in_the_same_run(service):
    report = benchmark_ingest(service, [MIXED], stages=True, twins=[f"{MIXED}={NATIVE}"])
    assert report["failed"] == 0 and report["ocr_pages"] == 2
    seconds = report["stage_seconds"]
    assert list(seconds) == list(STAGES)
    for busy in ("open_parse", "ocr_detection", "ocr_recognition", "tables", "chunking", "embedding", "storing"):
        assert seconds[busy] > 0, busy
    assert report["embedder_alone_chunks_per_s"] > 0 and report["ocr_alone_s_per_page"] > 0
    assert report["slowest_stage"] in report["stage_alone_seconds"]
    assert report["ratio_to_slowest_stage"] > 0.5
    cer = report["ocr_cer"]  # the two scanned pages against the same pages of the native file
    assert set(cer["pages"]) == {"mixed_native_scanned_20p.pdf p4", "mixed_native_scanned_20p.pdf p12"}
    assert cer["all"] < 0.05, cer
