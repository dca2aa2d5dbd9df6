"""bench-ingest: ingest PDFs into a throwaway knowledge base and report pages/s and peak memory."""

from __future__ import annotations

import resource
import statistics
import time
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from backend.quality.bench_stages import find_twins, pdf_files, stage_figures
from backend.service import DocLens
from backend.settings import Settings
from backend.stage_times import recording
from backend.types import IngestResult

SLOW_FACTOR = 3.0  # a file this many times slower per page than the median is named


def ingest_speed(results: Sequence[IngestResult]) -> dict[str, float]:
    """Pages per second for documents that were mostly native vs. mostly scanned."""
    native = [r for r in results if r.ok and r.status != "duplicate" and r.ocr_pages * 2 < max(1, r.pages)]
    scanned = [r for r in results if r.ok and r.status != "duplicate" and r.ocr_pages * 2 >= max(1, r.pages)]

    def rate(group: Sequence[IngestResult]) -> float:
        seconds = sum(r.seconds for r in group)
        return round(sum(r.pages for r in group) / seconds, 3) if seconds else 0.0

    return {
        "seconds": round(sum(r.seconds for r in results), 2),
        "native_pages_per_s": rate(native),
        "scanned_pages_per_s": rate(scanned),
    }


def slow_files(
    results: Sequence[IngestResult],
    factor: float = SLOW_FACTOR,
    stages: Optional[Mapping[str, Mapping[str, float]]] = None,
) -> list[str]:
    """Files that took more than ``factor`` times the median seconds per page, slowest first, each with its
    time and, where stage times were recorded, the stage it spent most in: one page that costs minutes
    hides in a total."""
    timed = [r for r in results if r.ok and r.status != "duplicate" and r.pages > 0]
    if len(timed) < 2:
        return []
    median = statistics.median(r.seconds / r.pages for r in timed)
    slow = sorted((r for r in timed if r.seconds / r.pages > factor * median), key=lambda r: -r.seconds / r.pages)
    return [
        f"{r.file}: {r.seconds / r.pages:.2f} s/page ({r.seconds:.1f} s, {r.pages} pages; median {median:.2f})"
        + _why(r, (stages or {}).get(r.file, {}))
        for r in slow
    ]


def _why(result: IngestResult, stages: Mapping[str, float]) -> str:
    """The stage a file spent most in, and what about the file explains it."""
    if not stages:
        return ""
    top = max(stages, key=lambda s: stages[s])
    facts = f"{result.ocr_pages} of {result.pages} pages scanned" if result.ocr_pages else ""
    if top == "embedding":
        facts = f"{result.chunks / result.pages:.1f} chunks a page"
    elif top == "figures":
        facts = f"{result.figures} figures"
    # busy seconds: threads add up (two OCR threads for 1 s are 2 s)
    return f": most in {top}, {stages[top]:.1f} of {sum(stages.values()):.1f} busy s" + (f" ({facts})" if facts else "")


def benchmark_ingest(
    service: DocLens, paths: Sequence[Path], stages: bool = False, twins: Sequence[str] = ()
) -> dict[str, Any]:
    """Ingest into a throwaway knowledge base and report pages/s and peak memory; with ``stages``, each
    stage's seconds against the ceilings measured in the same run (bench_stages)."""
    name = f"bench {time.strftime('%Y%m%d-%H%M%S')}"
    loading = time.perf_counter()
    service.embedder.warm_up()  # the app has its model loaded before an upload starts: ingest alone is timed
    model_load = time.perf_counter() - loading
    service.create_kb(name)
    by_stage: dict[str, Any] = {}
    try:
        with recording() as times:
            started = time.perf_counter()
            results = service.ingest(name, list(paths))
            wall = time.perf_counter() - started
        if stages:
            files = pdf_files(paths)
            by_stage = stage_figures(service, name, files, times, wall, find_twins(files, twins))
    finally:
        service.delete_kb(name, who="quality check", permanently=True)
    speed = ingest_speed(results)
    return {
        "model_load_seconds": round(model_load, 2),
        "files": len(results),
        "failed": sum(not r.ok for r in results),
        "pages": sum(r.pages for r in results),
        "ocr_pages": sum(r.ocr_pages for r in results),
        "chunks": sum(r.chunks for r in results),
        "wall_seconds": round(wall, 2),
        **speed,
        "slow_files": slow_files(results, stages=times.by_file),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        **by_stage,
    }


def format_figures(report: dict[str, Any]) -> str:
    """One figure a line (a list: one line per item; a table: one line per key, named after it)."""
    lines = []
    for key, value in report.items():
        if isinstance(value, dict):
            lines.append(format_figures({f"{key}.{k}": v for k, v in value.items()}))
        else:
            lines += [f"{key:24} {v}" for v in value] if isinstance(value, list) else [f"{key:24} {value}"]
    return "\n".join(lines)


# -- bench-corpus: does every PDF of a corpus index or fail with a named reason? -------------------


def ingest_corpus(settings: Settings, paths: Sequence[Path]) -> dict[str, Any]:
    """Ingest every PDF under ``paths`` into a throwaway knowledge base: each one indexes or fails with
    a named reason; "unexpected" errors are counted (and listed) apart."""
    files = sorted(p for path in paths for p in (path.rglob("*.pdf") if path.is_dir() else [path]))
    name = f"corpus {time.strftime('%Y%m%d-%H%M%S')}"
    with DocLens(settings) as service:
        service.create_kb(name)
        try:
            results = service.ingest(name, files)
        finally:
            service.delete_kb(name, who="quality check", permanently=True)
    unexpected = [r for r in results if not r.ok and "unexpected" in (r.error or "")]
    failed = [r for r in results if not r.ok and r not in unexpected]
    return {
        "files": len(results),
        "indexed": sum(r.ok for r in results),
        "failed_named": len(failed),
        "unexpected": len(unexpected),
        "pages": sum(r.pages for r in results),
        "failures": [r.error or r.file for r in failed + unexpected],
    }
