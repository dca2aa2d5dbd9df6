"""Retrieval evaluation on qa.jsonl sets: metrics per search mode, the left-out (unanswerable) variant,
and the calibration of the confidence on the questions asked."""

from __future__ import annotations

import json
import logging
import random
import statistics
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from backend.errors import DocLensError
from backend.quality.bench_ingest import ingest_speed
from backend.quality.calibration import calibration_splits
from backend.quality.metrics import SAMPLE_SEED, mean_metrics, percentile, question_metrics
from backend.quality.paper_split import HALVES, paper_half
from backend.retrieval.confidence import features
from backend.service import LOCAL, DocLens
from backend.types import SEARCH_MODES, ProgressCallback, ProgressEvent, SearchMode, SearchResult, Source

log = logging.getLogger(__name__)


def load_questions(path: Path, limit: int = 0, name_document: bool = False) -> list[dict]:
    """The questions of a qa.jsonl set (a fixed-seed sample of ``limit``). ``name_document``: each asked
    as naming its document, the way real users ask about one paper of many."""
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
    if name_document:
        for q in questions:
            q["question"] = naming_its_document(q["question"], q["doc"])
    return questions


def naming_its_document(question: str, doc: str) -> str:
    """ "What is X?" -> 'What is X as described in the document "<doc>"?'; a blank question, or one that
    names its document already, stays as it is."""
    if not question.strip() or doc.casefold() in question.casefold():
        return question
    return f'{question.strip().rstrip("?？ ")} as described in the document "{doc}"?'


def run_eval(
    service: DocLens,
    qa_path: Path,
    docs_dir: Path,
    kb_name: str | Sequence[str] | None = None,
    modes: Sequence[str] = SEARCH_MODES,
    limit: int = 0,
    progress: Optional[ProgressCallback] = None,
    keep_details: bool = False,
    unanswerable: bool = False,
    halves: bool = False,
    name_document: bool = False,
    kbs: int = 1,
    who: str = LOCAL,
    picked: bool = False,
) -> dict[str, Any]:
    """Metrics per mode. ``unanswerable``: also ask every question with its own document left out, so the
    confidence is calibrated and checked on questions the library cannot answer too. ``halves``: metrics
    of each half of the papers too (``paper_split``). ``name_document``: see ``load_questions``.
    ``picked``: each question asked with one document picked, as in the chat's document filter: its own,
    and (``unanswerable``) another one instead of leaving its own out.
    ``kb_name``: knowledge bases to use instead of temporary ones (one or several); ``kbs``: the temporary
    library dealt out to this many knowledge bases, each question asked of them all; ``who``: the login."""
    questions = load_questions(Path(qa_path), limit, name_document)
    temporary = kb_name is None
    stamp = f"eval {time.strftime('%Y%m%d-%H%M%S')}"
    names = (
        ([kb_name] if isinstance(kb_name, str) else list(kb_name))
        if kb_name
        else [stamp]
        if kbs <= 1
        else [f"{stamp} {i}" for i in range(1, kbs + 1)]
    )
    report: dict[str, Any] = {"questions": len(questions), "ingest": None, "kbs": len(names)}
    try:
        if temporary:  # ingest: only for a temporary library
            report["ingest"] = _ingest_split(service, names, Path(docs_dir), progress, who)
        docs = [d for name in names for d in service.documents(name, who)]
        report.update({"docs": len(docs), "pages": sum(d.pages for d in docs), "chunks": sum(d.chunks for d in docs)})
        picks = sorted({d.file for d in docs}) if picked else []
        details = _eval_modes(service, names, questions, modes, progress, who, picks, halves, unanswerable, report)
        if keep_details:
            report["details"] = details
    finally:
        for name in names if temporary else []:
            try:
                service.delete_kb(name, who=who, permanently=True)
            except DocLensError as exc:
                log.warning("could not delete the temporary knowledge base %r: %s", name, exc)
    return report


def _eval_modes(
    service: DocLens,
    names: list[str],
    questions: list[dict],
    modes: Sequence[str],
    progress: Optional[ProgressCallback],
    who: str,
    picks: Sequence[str],
    halves: bool,
    unanswerable: bool,
    report: dict[str, Any],
) -> dict[str, list]:
    """Every mode's metrics into ``report``, then the left-out questions and the confidence's checks;
    returns the per-question details."""
    report["modes"] = {}
    details: dict[str, list] = {}
    for mode in modes:
        report["modes"][mode], details[mode] = _eval_mode(
            service, names, questions, mode, progress, who=who, picks=picks
        )
        if halves:
            report["modes"][mode].update(_by_half(details[mode]))
    main_mode = SearchMode.RERANK.value if SearchMode.RERANK in details else modes[0]
    left_out: list[dict] = []
    if unanswerable:
        _, left_out = _eval_mode(
            service, names, questions, main_mode, progress, leave_out_gold=True, who=who, picks=picks
        )
        details[f"{main_mode}-unanswerable"] = left_out
        report["unanswerable"] = _unanswerable_summary(
            left_out, "another document picked" if picks else "own document left out"
        )
    report["calibration_splits"] = calibration_splits(details[main_mode], left_out)
    report["abstention"] = abstention_rates(details[main_mode], left_out, service.settings.confidence.abstain_below)
    report["calibration"] = report["calibration_splits"]["mix"]
    return details


def _ingest_split(
    service: DocLens, names: list[str], docs_dir: Path, progress: Optional[ProgressCallback], who: str
) -> dict[str, Any]:
    """The folder's PDFs dealt out to ``names`` in turn (all of them to one: the folder as it is)."""
    files = [docs_dir] if len(names) == 1 else sorted(docs_dir.rglob("*.pdf"))
    results = []
    for index, name in enumerate(names):
        service.create_kb(name, who=who)
        results += service.ingest(name, files[index :: len(names)], progress=progress, who=who)
    failed = [r for r in results if not r.ok]
    if failed:
        log.warning("%d documents failed to ingest: %s", len(failed), "; ".join(r.error or "" for r in failed))
    return ingest_speed(results)


def _eval_mode(
    service: DocLens,
    kb_name: list[str],
    questions: list[dict],
    mode: str,
    progress: Optional[ProgressCallback],
    leave_out_gold: bool = False,
    who: str = LOCAL,
    picks: Sequence[str] = (),
) -> tuple[dict[str, Any], list[dict]]:
    details = []
    for index, question in enumerate(questions, 1):
        details.append(_question_detail(service, kb_name, question, mode, leave_out_gold, who, picks))
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
        "latency_ms": {"p50": round(percentile(latencies, 50), 1), "p95": round(percentile(latencies, 95), 1)},
        "top5_chars": round(statistics.fmean(d["top5_chars"] for d in details), 1) if details else 0.0,
    }
    return summary, details


def _question_detail(
    service: DocLens,
    kb_name: list[str],
    question: dict,
    mode: str,
    leave_out_gold: bool,
    who: str,
    picks: Sequence[str] = (),
) -> dict:
    """One question searched (with its document left out, if asked): its metrics and what the
    confidence and the abstention made of it. ``who``: the login asking. ``picks``: the library's file
    names, when each question is asked with one of them picked (its own; left out: the next one)."""
    result: Optional[SearchResult] = None
    sources: list[Source] = []
    if question["question"].strip():  # the sets hold a few blank questions: a miss, not a crash
        exclude = [question["doc"]] if leave_out_gold and not picks else []
        doc = _picked(question["doc"], picks, leave_out_gold) if picks else None
        result = service.search(kb_name, question["question"], doc, mode=mode, top=10, exclude=exclude, who=who)
        sources = result.sources
    metrics = question_metrics(sources, question)
    return {
        "id": question["id"],
        "doc": question["doc"],
        "scanned": question["scanned"],
        "metrics": metrics,
        "found": found_in_top5(metrics, question),
        # nothing searched: no answer, and nothing to abstain from either
        "abstained": result is not None and result.abstains(service.settings.confidence.abstain_below),
        "latency_ms": result.latency_ms if result else None,
        "confidence": result.confidence if result else 0.0,
        "features": features(sources),
        "top5_chars": sum(len(s.text) for s in sources[:5]),
    }


def _picked(own: str, files: Sequence[str], another: bool) -> str:
    """The document picked for a question: its own, or the one after it in the library's order."""
    if not another:
        return own
    return files[(files.index(own) + 1) % len(files)] if own in files else files[0]


def abstention_rates(answerable: list[dict], left_out: list[dict], threshold: float) -> dict[str, Any]:
    """How often the answer abstains: on left-out questions it should (target 80 %+), on answerable ones it
    should not (target 5 % at most)."""

    def rate(rows: list[dict]) -> Optional[float]:
        return round(sum(d["abstained"] for d in rows) / len(rows), 4) if rows else None

    return {"threshold": threshold, "answerable": rate(answerable), "left_out": rate(left_out)}


def found_in_top5(metrics: dict[str, float], question: dict) -> bool:
    """The answer in the top 5; for a set without answer strings (real papers, scored by page) a gold page
    in the top 5 (never, when the question's document is left out)."""
    key = "answer_hit@5" if question["answers"] else "hit@5"
    return metrics[key] > 0


def _by_half(details: list[dict]) -> dict[str, Any]:
    """The mean metrics of the questions on each half of the papers."""
    return {half: mean_metrics([d["metrics"] for d in details if paper_half(d["doc"]) == half]) for half in HALVES}


def _unanswerable_summary(details: list[dict], how: str) -> dict[str, Any]:
    """Questions asked without their document: the answer is (almost always) not in the library."""
    confidences = [d["confidence"] for d in details]
    return {
        "how": how,
        "questions": len(details),
        "answer_hit@5": round(sum(d["metrics"]["answer_hit@5"] for d in details) / max(1, len(details)), 4),
        "mean_confidence": round(statistics.fmean(confidences), 1) if confidences else 0.0,
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
        for subset in ("all", "native", "scanned", *HALVES):
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
            f"unanswerable ({missing['how']}): {missing['questions']} questions, answer_hit@5 "
            f"{missing['answer_hit@5']}, mean confidence {missing['mean_confidence']}"
        )
    for split, check in (report.get("calibration_splits") or {}).items():
        lines.append(
            f"confidence {split:10} n={check['n']:<5} found {check['found']:.3f}  shown {check['mean_confidence']:.3f}"
            f"  ECE {check['ece']:.3f}  worst band of 30+ {check['worst_band']:.3f}  AUROC {check['auroc']:.3f}"
        )
    abstention = report.get("abstention")
    if abstention:
        rates = [
            f"{split} {abstention[split]:.3f}" for split in ("answerable", "left_out") if abstention[split] is not None
        ]
        lines.append(f"abstains below {abstention['threshold']:g}%: " + ", ".join(rates))
    calibration = report.get("calibration")
    if calibration:
        lines.append(
            f"calibration ECE {calibration['ece']}: "
            + ", ".join(f"{b['confidence']:.2f}->{b['accuracy']:.2f} (n={b['n']})" for b in calibration["bins"])
        )
    return "\n".join(lines)
