"""The confidence's calibration: the fit, its reliability table, and the fit over eval reports."""

import json

import pytest

from backend.quality.calibration import calibrate_from_reports, fit_calibration, reliability, worst_band
from backend.retrieval.confidence import FEATURES


def test_fit_learns_the_direction_of_a_separable_signal():
    rows = [{name: (1.0 if i % 2 else 0.0) if name == "top_keyword" else 0.5 for name in FEATURES} for i in range(200)]
    labels = [bool(i % 2) for i in range(200)]
    model = fit_calibration(rows, labels, l2=1.0)
    assert model["weights"]["top_keyword"] > 1.0


def test_reliability_table_and_ece():
    report = reliability([90, 90, 10, 10], [True, False, False, False], bins=10)
    assert report["bins"] == [
        {"confidence": 0.1, "accuracy": 0.0, "n": 2},
        {"confidence": 0.9, "accuracy": 0.5, "n": 2},
    ]
    assert report["ece"] == pytest.approx(0.5 * 0.1 + 0.5 * 0.4)


def _report(path, rows):
    details = [{"features": f, "metrics": {"answer_hit@5": float(hit)}, "confidence": 0.0} for f, hit in rows]
    path.write_text(json.dumps({"details": {"rerank": details[::2], "rerank-unanswerable": details[1::2]}}))
    return path


def test_calibration_is_fitted_on_all_reports_and_checked_per_report(tmp_path):
    strong = dict.fromkeys(FEATURES, 0.9)
    weak = dict.fromkeys(FEATURES, 0.1)
    monolingual = _report(tmp_path / "mono.json", [(strong, True), (weak, False)] * 40 + [(strong, False)] * 4)
    # a report written before the cross-lingual features existed: they read as 0
    old = _report(tmp_path / "old.json", [({"top_relevance": 0.8, "top_keyword": 0.5}, True), (weak, False)] * 30)
    target = tmp_path / "calibration.json"
    result = calibrate_from_reports([monolingual, old], target=target)
    assert result["questions"] == 84 + 60
    assert set(result["per_report"]) == {"mono.json", "old.json"}
    assert all(0.0 <= check["ece"] <= 1.0 for check in result["per_report"].values())
    saved = json.loads(target.read_text())
    assert set(saved["weights"]) == set(FEATURES) and saved["fitted_on"]["reports"] == ["mono.json", "old.json"]
    assert worst_band(
        {"bins": [{"confidence": 0.9, "accuracy": 0.5, "n": 49}, {"confidence": 0.3, "accuracy": 0.2, "n": 50}]}
    ) == pytest.approx(0.1)
