"""bench-embed: the embedder alone, per runtime (torch float32/bfloat16, OpenVINO int8, ONNX Runtime int8), on
the chunks of real PDFs: passages per second, a question's milliseconds, and how close each runtime's vectors
and dense ranking stay to float32's (mean cosine; page and answer hit@5 of the sets' questions, each ranked
over the chunks of its own set, no keyword search nor reranking).

Only native documents are read (no OCR): the first ``docs`` files of each set whose questions are all on
text-layer pages, and the questions about them.
"""

from __future__ import annotations

import logging
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from backend.documents.chunking import chunk_pages
from backend.documents.pdf import iter_pages
from backend.embedding.factory import create_embedder
from backend.quality.evaluation import load_questions
from backend.quality.metrics import mean_metrics, question_metrics
from backend.settings import Settings
from backend.types import Source

log = logging.getLogger(__name__)

# (name, embedding.dtype, embedding.int8_runtime): float32 first, the reference of the others
RUNTIMES = {
    "float32": ("float32", "none"),
    "bfloat16": ("bfloat16", "none"),
    "openvino-int8": ("int8", "openvino"),
    "onnxruntime-int8": ("int8", "onnxruntime"),
    "onnxruntime-q4": ("int8", "onnxruntime-q4"),
}
REFERENCE = "float32"
QUERY_RUNS = 20  # questions timed one at a time, after the embedder's warm-up
K = 5


@dataclass
class BenchSet:
    name: str
    texts: list[str]
    sources: list[Source]  # one per text: where it comes from
    questions: list[dict]


def load_set(folder: Path, settings: Settings, docs: int, questions: int) -> BenchSet:
    """The chunks of the first ``docs`` native documents of a bench set, and up to ``questions`` about them."""
    asked = load_questions(folder / "qa.jsonl")
    scanned = {q["doc"] for q in asked if q["scanned"]}
    names = sorted({q["doc"] for q in asked} - scanned)[:docs]
    texts: list[str] = []
    sources: list[Source] = []
    for name in names:
        pages = [parsed.to_page_text() for parsed in iter_pages(folder / "docs" / name, settings)]
        for chunk in chunk_pages(pages, settings.ingest.chunk_size, settings.ingest.chunk_overlap):
            texts.append(chunk.text)
            sources.append(Source(name, name, chunk.page, chunk.page_end, chunk.chunk_index, chunk.text))
    chosen = [q for q in asked if q["doc"] in set(names)]
    step = max(1, len(chosen) // questions) if questions else 1
    return BenchSet(folder.name, texts, sources, chosen[::step][:questions] if questions else chosen)


def runtime_settings(settings: Settings, dtype: str, int8_runtime: str) -> Settings:
    embedding = settings.embedding.model_copy(update={"dtype": dtype, "int8_runtime": int8_runtime})
    return settings.model_copy(update={"embedding": embedding})


def measure_runtime(settings: Settings, sets: Sequence[BenchSet]) -> dict[str, Any]:
    """Load (building on first use), then embed every set's chunks and questions, timed."""
    started = time.monotonic()
    embedder = create_embedder(settings)
    embedder.warm_up()
    loaded = time.monotonic() - started
    passages, queries, seconds, cpu_seconds, chunks = [], [], 0.0, 0.0, 0
    for bench_set in sets:
        started, cpu_started = time.monotonic(), time.process_time()
        passages.append(embedder.embed_passages(bench_set.texts))
        seconds += time.monotonic() - started
        cpu_seconds += time.process_time() - cpu_started  # less swayed by other jobs on the cores
        chunks += len(bench_set.texts)
        queries.append(embedder.embed_queries([q["question"] for q in bench_set.questions]))
    timed = [q["question"] for s in sets for q in s.questions][:QUERY_RUNS]
    query_ms = []
    for question in timed:
        started = time.monotonic()
        embedder.embed_queries([question])
        query_ms.append(1000 * (time.monotonic() - started))
    return {
        "embedder": type(embedder).__name__,
        "load_s": round(loaded, 1),
        "chunks": chunks,
        "chunks_per_s": round(chunks / seconds, 2) if seconds else 0.0,
        "chunks_per_cpu_s": round(chunks / cpu_seconds, 2) if cpu_seconds else 0.0,
        "query_ms_median": round(statistics.median(query_ms), 1) if query_ms else 0.0,
        "passages": passages,
        "queries": queries,
    }


def dense_quality(bench_set: BenchSet, passages: np.ndarray, queries: np.ndarray) -> dict[str, float]:
    """Page and answer hit@5 of the questions ranked by cosine alone over the set's chunks."""
    rows = []
    for question, vector in zip(bench_set.questions, queries):
        top = np.argsort(-(passages @ vector))[:10]
        rows.append(question_metrics([bench_set.sources[i] for i in top], question))
    means = mean_metrics(rows)
    return {"hit@5": means.get("hit@5", 0.0), "answer_hit@5": means.get("answer_hit@5", 0.0)}


def run(
    settings: Settings,
    folders: Sequence[Path],
    docs: int,
    questions: int,
    runtimes: Sequence[str],
    reference: str = REFERENCE,
) -> dict:
    """``reference``: the runtime the others' cosines are taken to (float32; onnxruntime-q4 stands in for it
    at cosine 0.9999 when float32 torch would take too long on a busy machine)."""
    sets = [load_set(folder, settings, docs, questions) for folder in folders]
    names = [reference] + [r for r in runtimes if r != reference]
    measured = {}
    for name in names:
        dtype, int8_runtime = RUNTIMES[name]
        log.info("bench-embed: %s", name)
        measured[name] = measure_runtime(runtime_settings(settings, dtype, int8_runtime), sets)
    ref = measured[reference]
    report: dict[str, Any] = {"sets": {s.name: {"chunks": len(s.texts), "questions": len(s.questions)} for s in sets}}
    for name, m in measured.items():
        keys = ("embedder", "load_s", "chunks", "chunks_per_s", "chunks_per_cpu_s", "query_ms_median")
        row = {key: m[key] for key in keys}
        for k, bench_set in enumerate(sets):
            cosines = np.sum(m["passages"][k] * ref["passages"][k], axis=1)
            query_cosines = np.sum(m["queries"][k] * ref["queries"][k], axis=1)
            row[bench_set.name] = {
                "mean_cosine": round(float(cosines.mean()), 4),
                "min_cosine": round(float(cosines.min()), 4),
                "query_mean_cosine": round(float(query_cosines.mean()), 4) if len(query_cosines) else 0.0,
                **dense_quality(bench_set, m["passages"][k], m["queries"][k]),
            }
        report[name] = row
    return report


def format_report(report: dict[str, Any]) -> str:
    sets = list(report["sets"])
    header = "runtime            chunks/s  per CPU-s  query ms  load s  " + "  ".join(
        f"{s}: cos/min/hit@5/ans@5" for s in sets
    )
    lines = [header]
    for name, row in report.items():
        if name == "sets":
            continue
        quality = "  ".join(
            f"{row[s]['mean_cosine']:.4f}/{row[s]['min_cosine']:.3f}/{row[s]['hit@5']:.3f}/{row[s]['answer_hit@5']:.3f}"
            for s in sets
        )
        lines.append(
            f"{name:<18} {row['chunks_per_s']:>8.2f}  {row['chunks_per_cpu_s']:>9.2f}  {row['query_ms_median']:>8.1f}  "
            f"{row['load_s']:>6.1f}  {quality}"
        )
    counts = ", ".join(f"{s} {v['chunks']} chunks / {v['questions']} questions" for s, v in report["sets"].items())
    return "\n".join(lines + [counts])
