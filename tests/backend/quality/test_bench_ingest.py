"""The ingest benchmark's speeds."""

from backend.quality.bench_ingest import ingest_speed
from backend.types import IngestResult


def test_ingest_speed_splits_native_and_scanned_documents():
    results = [
        IngestResult("a", "indexed", pages=10, ocr_pages=0, seconds=2.0),
        IngestResult("b", "indexed", pages=4, ocr_pages=4, seconds=8.0),
        IngestResult("c", "failed", pages=0, seconds=1.0),
    ]
    speed = ingest_speed(results)
    assert speed["native_pages_per_s"] == 5.0 and speed["scanned_pages_per_s"] == 0.5
