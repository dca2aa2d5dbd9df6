"""Retrieval evaluation on qa.jsonl sets, the recall self-test, and the ingest benchmark."""

from __future__ import annotations

import json
import logging
import random
import re
import resource
import statistics
import time
import unicodedata
from pathlib import Path
from typing import Any, Optional, Sequence

from backend.errors import DocLensError
from backend.retrieval.confidence import (
    CALIBRATION_FILE,
    FEATURES,
    confidence_from_features,
    features,
    fit_calibration,
    load_calibration,
    reliability,
)
from backend.types import SEARCH_MODES, IngestResult, ProgressCallback, ProgressEvent, SearchMode, SearchResult, Source

log = logging.getLogger(__name__)

SAMPLE_SEED = 20261129
KS = (1, 5, 10)
_PUNCT_OR_SPACE = re.compile(r"[\s\W_]+", re.UNICODE)


# -- metrics -----------------------------------------------------------------------------------


def normalize_answer(text: str) -> str:
    """NFKC, lower case, white space and punctuation removed (the bench's answer-matching rule)."""
    return _PUNCT_OR_SPACE.sub("", unicodedata.normalize("NFKC", text).lower())


def source_has_page(source: Source, doc: str, pages: Sequence[int]) -> bool:
    return source.file == doc and any(source.page <= p <= source.page_end for p in pages)


def source_has_answer(source: Source, answers: Sequence[str]) -> bool:
    text = normalize_answer(source.text)
    return any(a and a in text for a in (normalize_answer(x) for x in answers))


def question_metrics(sources: Sequence[Source], question: dict) -> dict[str, float]:
    page_hits = [source_has_page(s, question["doc"], question["pages"]) for s in sources[:10]]
    answer_hits = [source_has_answer(s, question["answers"]) for s in sources[:10]]
    metrics = {}
    for k in KS:
        metrics[f"hit@{k}"] = float(any(page_hits[:k]))
        metrics[f"answer_hit@{k}"] = float(any(answer_hits[:k]))
    first = next((i for i, hit in enumerate(answer_hits, 1) if hit), None)
    metrics["mrr@10"] = 1.0 / first if first else 0.0
    first_page = next((i for i, hit in enumerate(page_hits, 1) if hit), None)
    metrics["page_mrr@10"] = 1.0 / first_page if first_page else 0.0  # the metric of sets without answers
    return metrics


def mean_metrics(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    return {key: round(sum(r[key] for r in rows) / len(rows), 4) for key in rows[0]}


# -- eval --------------------------------------------------------------------------------------


def load_questions(path: Path, limit: int = 0) -> list[dict]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DocLensError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    questions = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            q = json.loads(line)
            questions.append(
                {
                    "id": q.get("id", number),
                    "question": q["question"],
                    "answers": list(q["answers"]),
                    "doc": q["doc"],
                    "pages": [int(p) for p in q["pages"]],
                    "scanned": bool(q.get("scanned", False)),
                }
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise DocLensError(f"{path}:{number}: not a qa line ({exc.__class__.__name__}: {exc})") from None
    if limit and limit < len(questions):
        questions = random.Random(SAMPLE_SEED).sample(questions, limit)
    return questions


def run_eval(
    service,
    qa_path: Path,
    docs_dir: Path,
    kb_name: Optional[str] = None,
    modes: Sequence[str] = SEARCH_MODES,
    limit: int = 0,
    progress: Optional[ProgressCallback] = None,
    keep_details: bool = False,
    unanswerable: bool = False,
) -> dict[str, Any]:
    """Metrics per mode. ``unanswerable``: also ask every question with its own document left out, so the
    confidence is calibrated and checked on questions the library cannot answer too."""
    questions = load_questions(Path(qa_path), limit)
    temporary = kb_name is None
    name = kb_name or f"eval {time.strftime('%Y%m%d-%H%M%S')}"
    report: dict[str, Any] = {"questions": len(questions), "ingest": None}  # ingest: only for a temporary KB
    try:
        if temporary:
            service.create_kb(name)
            results = service.ingest(name, [Path(docs_dir)], progress=progress)
            report["ingest"] = ingest_speed(results)
            failed = [r for r in results if not r.ok]
            if failed:
                log.warning("%d documents failed to ingest: %s", len(failed), "; ".join(r.error or "" for r in failed))
        docs = service.documents(name)
        report.update({"docs": len(docs), "pages": sum(d.pages for d in docs), "chunks": sum(d.chunks for d in docs)})
        report["modes"] = {}
        details: dict[str, list] = {}
        for mode in modes:
            report["modes"][mode], details[mode] = _eval_mode(service, name, questions, mode, progress)
        main_mode = SearchMode.RERANK.value if SearchMode.RERANK in details else modes[0]
        checked = list(details[main_mode])
        if unanswerable:
            _, left_out = _eval_mode(service, name, questions, main_mode, progress, leave_out_gold=True)
            details[f"{main_mode}-unanswerable"] = left_out
            report["unanswerable"] = _unanswerable_summary(left_out)
            checked += left_out
        labels = [d["metrics"]["answer_hit@5"] > 0 for d in checked]
        report["calibration"] = reliability([d["confidence"] for d in checked], labels)
        if keep_details:
            report["details"] = details
    finally:
        if temporary:
            try:
                service.delete_kb(name)
            except DocLensError as exc:
                log.warning("could not delete the temporary knowledge base %r: %s", name, exc)
    return report


def _eval_mode(
    service,
    kb_name: str,
    questions: list[dict],
    mode: str,
    progress: Optional[ProgressCallback],
    leave_out_gold: bool = False,
) -> tuple[dict[str, Any], list[dict]]:
    details = []
    for index, question in enumerate(questions, 1):
        if not question["question"].strip():  # the sets hold a few blank questions: a miss, not a crash
            details.append(
                {
                    "id": question["id"],
                    "scanned": question["scanned"],
                    "metrics": question_metrics([], question),
                    "latency_ms": None,
                    "confidence": 0.0,
                    "features": features([]),
                    "top5_chars": 0,
                }
            )
            continue
        exclude = [question["doc"]] if leave_out_gold else []
        result: SearchResult = service.search(kb_name, question["question"], mode=mode, top=10, exclude=exclude)
        details.append(
            {
                "id": question["id"],
                "scanned": question["scanned"],
                "metrics": question_metrics(result.sources, question),
                "latency_ms": result.latency_ms,
                "confidence": result.confidence,
                "features": features(result.sources),
                "top5_chars": sum(len(s.text) for s in result.sources[:5]),
            }
        )
        if progress is not None and (index % 20 == 0 or index == len(questions)):
            progress(
                ProgressEvent(
                    "search",
                    file=f"mode {mode}",
                    file_index=1,
                    file_count=1,
                    current=index,
                    total=len(questions),
                    message=f"{mode}: question {index} of {len(questions)}",
                )
            )
    latencies = sorted(d["latency_ms"] for d in details if d["latency_ms"] is not None)
    summary = {
        "all": mean_metrics([d["metrics"] for d in details]),
        "native": mean_metrics([d["metrics"] for d in details if not d["scanned"]]),
        "scanned": mean_metrics([d["metrics"] for d in details if d["scanned"]]),
        "latency_ms": {"p50": round(_percentile(latencies, 50), 1), "p95": round(_percentile(latencies, 95), 1)},
        "top5_chars": round(statistics.fmean(d["top5_chars"] for d in details), 1) if details else 0.0,
    }
    return summary, details


def _unanswerable_summary(details: list[dict]) -> dict[str, Any]:
    """Questions asked without their document: the answer is (almost always) not in the library."""
    confidences = [d["confidence"] for d in details]
    return {
        "questions": len(details),
        "answer_hit@5": round(sum(d["metrics"]["answer_hit@5"] for d in details) / max(1, len(details)), 4),
        "mean_confidence": round(statistics.fmean(confidences), 1) if confidences else 0.0,
    }


def _percentile(sorted_values: Sequence[float], pct: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, round(pct / 100 * (len(sorted_values) - 1))))
    return float(sorted_values[index])


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


def format_report(report: dict[str, Any]) -> str:
    lines = [
        f"questions {report.get('questions')}  docs {report.get('docs')}  pages {report.get('pages')}  "
        f"chunks {report.get('chunks')}"
    ]
    if report.get("ingest"):
        i = report["ingest"]
        lines.append(
            f"ingest {i['seconds']} s  native {i['native_pages_per_s']} pages/s  "
            f"scanned {i['scanned_pages_per_s']} pages/s"
        )
    columns = ["hit@1", "hit@5", "page_mrr@10", "answer_hit@1", "answer_hit@5", "answer_hit@10", "mrr@10"]
    lines.append(f"{'mode':8} {'subset':8} " + " ".join(f"{c:>13}" for c in columns) + "   p50 ms   p95 ms  top5 chars")
    for mode, data in report.get("modes", {}).items():
        for subset in ("all", "native", "scanned"):
            values = data.get(subset) or {}
            if not values:
                continue
            tail = (
                f"  {data['latency_ms']['p50']:7.1f}  {data['latency_ms']['p95']:7.1f}  {data['top5_chars']:10.0f}"
                if subset == "all"
                else ""
            )
            lines.append(f"{mode:8} {subset:8} " + " ".join(f"{values.get(c, 0):13.3f}" for c in columns) + tail)
    missing = report.get("unanswerable")
    if missing:
        lines.append(
            f"unanswerable (own document left out): {missing['questions']} questions, answer_hit@5 "
            f"{missing['answer_hit@5']}, mean confidence {missing['mean_confidence']}"
        )
    calibration = report.get("calibration")
    if calibration:
        lines.append(
            f"calibration ECE {calibration['ece']}: "
            + ", ".join(f"{b['confidence']:.2f}->{b['accuracy']:.2f} (n={b['n']})" for b in calibration["bins"])
        )
    return "\n".join(lines)


def calibrate_from_reports(paths: Sequence[Path], mode: str = "rerank", target: Path = CALIBRATION_FILE) -> dict:
    """Fit confidence = P(answer in the top 5) on the per-question details of eval reports, and save it."""
    per_report = {}
    for path in paths:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
        all_details = report.get("details") or {}
        details = all_details.get(mode)
        if not details:
            raise DocLensError(f"{path}: no per-question details for mode {mode}; run eval with --details")
        details = details + all_details.get(f"{mode}-unanswerable", [])
        per_report[Path(path).name] = (
            [_features_of(d) for d in details],
            [d["metrics"]["answer_hit@5"] > 0 for d in details],
        )
    rows = [r for features_, _ in per_report.values() for r in features_]
    labels = [label for _, labels_ in per_report.values() for label in labels_]
    model = fit_calibration(rows, labels)
    model["fitted_on"] = {"questions": len(rows), "mode": mode, "label": "answer_hit@5", "reports": list(per_report)}
    target.write_text(json.dumps(model, indent=2) + "\n", encoding="utf-8")
    load_calibration.cache_clear()

    def check(features_: list[dict], labels_: list[bool]) -> dict:
        return reliability([confidence_from_features(r, model) for r in features_], labels_)

    # One fit for every language pair: the error is reported per report (per set and direction) too.
    return {
        "questions": len(rows),
        "path": str(target),
        "reliability": check(rows, labels),
        "per_report": {name: check(*data) for name, data in per_report.items()},
    }


def _features_of(detail: dict) -> dict[str, float]:
    """A detail's features; reports made before a feature existed read it as 0."""
    return {name: float(detail["features"].get(name, 0.0)) for name in FEATURES}


def worst_band(calibration: dict, min_questions: int = 50) -> float:
    """The largest gap between confidence shown and accuracy in a band of at least ``min_questions``."""
    gaps = [abs(b["confidence"] - b["accuracy"]) for b in calibration["bins"] if b["n"] >= min_questions]
    return round(max(gaps), 3) if gaps else 0.0


# -- self-test ---------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[。！？；!?;])|(?<=\.)\s+")


def probe_sentence(text: str) -> str:
    """The longest sentence of a chunk (capped), used as the question that should find that chunk."""
    sentences = [s.strip() for s in _SENTENCE_END.split(text) if s and len(s.strip()) >= 8]
    best = max(sentences, key=len) if sentences else text.strip()
    return best[:200]


def selftest(service, kb_name: str, samples: int = 50, progress: Optional[ProgressCallback] = None) -> dict[str, Any]:
    chunks = [c for c in service.indexed_chunks(kb_name) if len(c.content) >= 30]
    if not chunks:
        raise DocLensError(f"knowledge base '{kb_name.strip()}' has no chunks to test: upload PDFs first")
    picked = random.Random(SAMPLE_SEED).sample(chunks, min(samples, len(chunks)))
    chunk_hits = {1: 0, 5: 0}
    page_hits = {1: 0, 5: 0}
    for index, chunk in enumerate(picked, 1):
        if progress is not None:  # 20+ s on a busy machine: say how far along it is
            progress(
                ProgressEvent("search", file="self-test", file_index=1, file_count=1, current=index, total=len(picked))
            )
        result = service.search(kb_name, probe_sentence(chunk.content), mode=SearchMode.RERANK, top=5)
        for k in (1, 5):
            top = result.sources[:k]
            chunk_hits[k] += any(s.chunk_id == chunk.id for s in top)
            page_hits[k] += any(s.doc_id == chunk.doc_id and s.page <= chunk.page <= s.page_end for s in top)
    n = len(picked)
    return {
        "samples": n,
        "chunk_top1": round(chunk_hits[1] / n, 3),
        "chunk_top5": round(chunk_hits[5] / n, 3),
        "page_top1": round(page_hits[1] / n, 3),
        "page_top5": round(page_hits[5] / n, 3),
    }


# -- ingest benchmark --------------------------------------------------------------------------


def benchmark_ingest(service, paths: Sequence[Path]) -> dict[str, Any]:
    """Ingest into a throwaway knowledge base and report pages/s and peak memory."""
    name = f"bench {time.strftime('%Y%m%d-%H%M%S')}"
    loading = time.perf_counter()
    service.embedder.warm_up()  # the app has its model loaded before an upload starts: ingest alone is timed
    model_load = time.perf_counter() - loading
    service.create_kb(name)
    try:
        started = time.perf_counter()
        results = service.ingest(name, list(paths))
        wall = time.perf_counter() - started
    finally:
        service.delete_kb(name)
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
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
