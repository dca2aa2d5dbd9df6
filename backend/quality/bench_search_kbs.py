"""bench-search --kbs N: a question over N knowledge bases against the same chunks in one.

The same synthetic chunks as ``bench_search`` (papers dealt out to the knowledge bases in turn) are built
once per size, N and engine; both libraries are asked the same questions through ``DocLens.search`` in its
default mode (one ranking over all N), and the p95s are compared.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from backend.quality.bench_search import (
    QUESTIONS,
    WARMUP,
    Base,
    _settings_for,
    build_kb,
    engine_tag,
    kb_names,
    load_base,
    measure_questions,
)
from backend.service import DocLens
from backend.settings import Settings

log = logging.getLogger(__name__)


def run_kbs(
    settings: Settings, sizes: Sequence[int], kbs: int, sets: Sequence[Path], cache: Optional[Path] = None
) -> dict[str, Any]:
    """For each size: the chunks in one knowledge base, then dealt out to ``kbs``; p50/p95 of each."""
    cache = cache or settings.data_dir / "bench-search"
    cache.mkdir(parents=True, exist_ok=True)
    base = load_base(settings, sets, cache)
    report: dict[str, Any] = {"engine": engine_tag(settings), "kbs": kbs, "sizes": []}
    for chunks in sizes:
        row: dict[str, Any] = {"chunks": chunks}
        for count in (1, kbs):
            folder = cache / engine_tag(settings) / f"lite-{chunks}" if count == 1 else None
            folder = folder or cache / engine_tag(settings) / f"lite-{chunks}-in-{count}"
            row["one" if count == 1 else "split"] = _measure(settings, base, chunks, count, folder)
        row["p95_ratio"] = round(row["split"]["p95_ms"] / row["one"]["p95_ms"], 2)
        row["load_average"] = round(os.getloadavg()[0], 1)
        report["sizes"].append(row)
        log.info("bench-search --kbs: %s", row)
    return report


def _measure(settings: Settings, base: Base, chunks: int, kbs: int, folder: Path) -> dict[str, Any]:
    if not (folder / "complete").exists():
        shutil.rmtree(folder, ignore_errors=True)  # a build that did not finish
        started = time.perf_counter()
        build_kb(_settings_for(settings, folder), base, chunks, kbs)
        (folder / "complete").write_text(f"{time.perf_counter() - started:.0f} s\n")
    with DocLens(_settings_for(settings, folder)) as service:
        service.load_all()
        service.prepare_models_in_background().join()
        names = kb_names(kbs)
        service.search(names, base.questions[-1])  # the first question's one-off costs are not measured
        figures = measure_questions(service, base.questions[: QUESTIONS + WARMUP], kbs=names)
    return {"p50_ms": figures["p50_ms"], "p95_ms": figures["p95_ms"]}


def table(report: dict[str, Any]) -> str:
    lines = [
        f"| chunks | one KB p50 / p95 ms | in {report['kbs']} KBs p50 / p95 ms | p95 ratio | load |",
        "|---|---|---|---|---|",
    ]
    for row in report["sizes"]:
        one, split = row["one"], row["split"]
        lines.append(
            f"| {row['chunks']:,} | {one['p50_ms']:.0f} / {one['p95_ms']:.0f} "
            f"| {split['p50_ms']:.0f} / {split['p95_ms']:.0f} | {row['p95_ratio']:.2f}x | {row['load_average']} |"
        )
    return "\n".join(lines)
