"""The confidence's calibration: fit P(answer in the top 5) on eval reports made with ``--details``, and
check it (expected calibration error, reliability bins, the worst band)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from backend.errors import DocLensError
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


def calibrate(reports: Sequence[Path], mode: str = "rerank") -> dict[str, Any]:
    """Fit the confidence on eval reports and save it; per report its reliability and ``worst_band``
    (the largest gap in a band of 50+ questions)."""
    result = calibrate_from_reports([Path(p) for p in reports], mode=mode)
    for check in result["per_report"].values():
        check["worst_band"] = worst_band(check)
    return result
