"""The ingest benchmark's speeds."""

from backend.quality.bench_ingest import ingest_speed, slow_files
from backend.types import IngestResult


def test_ingest_speed_splits_native_and_scanned_documents():
    results = [
        IngestResult("a", "indexed", pages=10, ocr_pages=0, seconds=2.0),
        IngestResult("b", "indexed", pages=4, ocr_pages=4, seconds=8.0),
        IngestResult("c", "failed", pages=0, seconds=1.0),
    ]
    speed = ingest_speed(results)
    assert speed["native_pages_per_s"] == 5.0 and speed["scanned_pages_per_s"] == 0.5


def test_slow_files_names_every_file_over_three_times_the_median_seconds_per_page():
    results = [
        IngestResult("a.pdf", "indexed", pages=10, seconds=10.0),  # 1 s/page
        IngestResult("b.pdf", "indexed", pages=5, seconds=6.0),  # 1.2 s/page
        IngestResult("c.pdf", "indexed", pages=2, seconds=3.0),  # 1.5: the median
        IngestResult("words.pdf", "indexed", pages=9, seconds=254.0),  # 28 s/page
        IngestResult("d.pdf", "indexed", pages=1, seconds=3.5),  # 3.5: within 3x the median (4.5)
        IngestResult("e.pdf", "failed", pages=0, seconds=90.0),
        IngestResult("f.pdf", "duplicate", pages=3, seconds=60.0),
    ]
    assert slow_files(results) == ["words.pdf: 28.22 s/page (254.0 s, 9 pages; median 1.50)"]
    assert slow_files(results[:1]) == []


def test_a_slow_file_says_which_stage_took_its_time():
    results = [
        IngestResult("a.pdf", "indexed", pages=10, seconds=10.0),
        IngestResult("b.pdf", "indexed", pages=10, seconds=10.0),
        IngestResult("scan.pdf", "indexed", pages=2, ocr_pages=2, seconds=9.0),
    ]
    stages = {"scan.pdf": {"ocr_recognition": 6.0, "ocr_detection": 2.0, "embedding": 0.5}}
    assert slow_files(results, stages=stages) == [
        "scan.pdf: 4.50 s/page (9.0 s, 2 pages; median 1.00): most in ocr_recognition, 6.0 of 8.5 busy s (2 of 2 pages scanned)"
    ]
