"""The confidence's calibration: fit P(answer in the top 5) on eval reports made with ``--details``, and
check it (expected calibration error, reliability bins, the worst band, AUROC) on the answerable
questions, the left-out ones and their mix apart: a mix can look calibrated while both halves are off."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from backend.errors import DocLensError
from backend.quality.paper_split import HELD_OUT, TUNE, paper_half
from backend.retrieval.confidence import CALIBRATION_FILE, FEATURES, confidence_from_features, load_calibration


def fit_calibration(
    rows: Sequence[dict[str, float]], labels: Sequence[bool], l2: float = 1e-3, iterations: int = 500
) -> dict:
    """Logistic regression by Newton's method (tiny data: a few thousand questions, ten features)."""
    x = np.array([[r[name] for name in FEATURES] for r in rows], dtype=np.float64)
    x = np.hstack([np.ones((len(x), 1)), x])
    y = np.array(labels, dtype=np.float64)
    w = np.zeros(x.shape[1])
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -30, 30)))
        gradient = x.T @ (p - y) + l2 * np.r_[0.0, w[1:]]
        hessian = (x.T * (p * (1 - p))) @ x + l2 * np.diag(np.r_[0.0, np.ones(len(FEATURES))])
        step = np.linalg.solve(hessian + 1e-9 * np.eye(len(w)), gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return {"bias": float(w[0]), "weights": {name: float(v) for name, v in zip(FEATURES, w[1:])}}


def reliability(confidences: Sequence[float], labels: Sequence[bool], bins: int = 10) -> dict:
    """Expected calibration error and the per-bin table (confidence shown vs. accuracy observed)."""
    table = []
    ece = 0.0
    total = len(confidences)
    for b in range(bins):
        low, high = 100.0 * b / bins, 100.0 * (b + 1) / bins
        members = [(c, hit) for c, hit in zip(confidences, labels) if low <= c < high or (b == bins - 1 and c == 100.0)]
        if not members:
            continue
        mean_conf = sum(c for c, _ in members) / len(members) / 100.0
        accuracy = sum(1 for _, hit in members if hit) / len(members)
        ece += len(members) / total * abs(mean_conf - accuracy)
        table.append({"confidence": round(mean_conf, 3), "accuracy": round(accuracy, 3), "n": len(members)})
    return {"ece": round(ece, 4), "bins": table}


def auroc(confidences: Sequence[float], labels: Sequence[bool]) -> float:
    """How well the confidence tells found from not found: P(a found question reads higher than one not
    found), ties counting half (0.5 when only one kind is there: nothing to tell apart)."""
    found = [c for c, hit in zip(confidences, labels) if hit]
    missed = [c for c, hit in zip(confidences, labels) if not hit]
    if not found or not missed:
        return 0.5
    ranks = _mid_ranks([*found, *missed])
    found_rank_sum = sum(ranks[c] for c in found)
    above = found_rank_sum - len(found) * (len(found) + 1) / 2
    return round(above / (len(found) * len(missed)), 4)


def _mid_ranks(values: Sequence[float]) -> dict[float, float]:
    """Each value's mean 1-based rank among ``values`` (tied values share it)."""
    ordered = sorted(values)
    ranks: dict[float, float] = {}
    start = 0
    while start < len(ordered):
        end = start
        while end + 1 < len(ordered) and ordered[end + 1] == ordered[start]:
            end += 1
        ranks[ordered[start]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def calibration_check(confidences: Sequence[float], labels: Sequence[bool], min_band: int = 30) -> dict[str, Any]:
    """ECE with its bins, the worst band of ``min_band``+ questions, AUROC and the counts."""
    check: dict[str, Any] = reliability(confidences, labels)
    check["worst_band"] = worst_band(check, min_band)
    check["auroc"] = auroc(confidences, labels)
    check["n"] = len(confidences)
    check["found"] = round(sum(labels) / len(labels), 4) if labels else 0.0
    check["mean_confidence"] = round(sum(confidences) / len(confidences) / 100, 4) if confidences else 0.0
    return check


def calibration_splits(answerable: Sequence[dict], left_out: Sequence[dict]) -> dict[str, dict[str, Any]]:
    """The check on the answerable questions, the left-out ones and both (eval details: ``confidence``
    and ``found``); a split without questions is left out."""
    parts = {"answerable": list(answerable), "left_out": list(left_out), "mix": [*answerable, *left_out]}
    return {name: _check_rows(rows) for name, rows in parts.items() if rows}


def _check_rows(rows: Sequence[dict]) -> dict[str, Any]:
    return calibration_check([d["confidence"] for d in rows], [found(d) for d in rows])


def found(detail: dict) -> bool:
    """What the confidence predicts: the answer in the top 5, or for a set without answer strings (real
    papers) a gold page in the top 5. Details written before ``found`` existed read answer_hit@5."""
    if "found" in detail:
        return bool(detail["found"])
    return detail["metrics"]["answer_hit@5"] > 0


def calibrate_from_reports(
    paths: Sequence[Path], mode: str = "rerank", target: Path = CALIBRATION_FILE, hold_out: bool = False
) -> dict:
    """Fit confidence = P(found in the top 5) on the per-question details of eval reports, and save it;
    the fit is then checked on each report's answerable questions, left-out ones and their mix.
    ``hold_out``: fit on the questions of one half of the documents only (``paper_split``) and check on
    the other half, which the fit never saw."""
    per_report: dict[str, dict[str, list[dict]]] = {}
    for path in paths:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
        all_details = report.get("details") or {}
        details = all_details.get(mode)
        if not details:
            raise DocLensError(f"{path}: no per-question details for mode {mode}; run eval with --details")
        per_report[Path(path).name] = {"answerable": details, "left_out": all_details.get(f"{mode}-unanswerable", [])}
    every = _in_half(_all(per_report), TUNE if hold_out else None)
    model = fit_calibration([_features_of(d) for d in every], [found(d) for d in every])
    model["fitted_on"] = {
        "questions": len(every),
        "mode": mode,
        "label": "found in the top 5",
        "reports": list(per_report),
        "documents": f"the {TUNE} half (paper_split)" if hold_out else "all",
    }
    target.write_text(json.dumps(model, indent=2) + "\n", encoding="utf-8")
    load_calibration.cache_clear()

    def checked(rows: list[dict]) -> list[dict]:
        unseen = _in_half(rows, HELD_OUT if hold_out else None)
        return [{"confidence": confidence_from_features(_features_of(d), model), "found": found(d)} for d in unseen]

    # One fit for every language pair: the check is reported per report (per set and direction) too.
    return {
        "questions": len(every),
        "path": str(target),
        "checked_on": f"the {HELD_OUT} half" if hold_out else "the questions fitted on",
        "reliability": _check_rows(checked(_all(per_report))),
        "per_report": {
            name: calibration_splits(checked(parts["answerable"]), checked(parts["left_out"]))
            for name, parts in per_report.items()
        },
    }


def _all(per_report: dict[str, dict[str, list[dict]]]) -> list[dict]:
    return [d for parts in per_report.values() for rows in parts.values() for d in rows]


def _in_half(rows: list[dict], half: str | None) -> list[dict]:
    """The questions on documents of ``half`` (None: all); a report made before details named their
    document cannot be split."""
    if half is None:
        return rows
    if rows and "doc" not in rows[0]:
        raise DocLensError("these eval reports do not name each question's document: run eval again to hold out")
    return [d for d in rows if paper_half(d["doc"]) == half]


def _features_of(detail: dict) -> dict[str, float]:
    """A detail's features; reports made before a feature existed read it as 0."""
    return {name: float(detail["features"].get(name, 0.0)) for name in FEATURES}


def worst_band(calibration: dict, min_questions: int = 50) -> float:
    """The largest gap between confidence shown and accuracy in a band of at least ``min_questions``."""
    gaps = [abs(b["confidence"] - b["accuracy"]) for b in calibration["bins"] if b["n"] >= min_questions]
    return round(max(gaps), 3) if gaps else 0.0


def calibrate(reports: Sequence[Path], mode: str = "rerank", hold_out: bool = False) -> dict[str, Any]:
    """Fit the confidence on eval reports and save it (see :func:`calibrate_from_reports`)."""
    return calibrate_from_reports([Path(p) for p in reports], mode=mode, hold_out=hold_out)
