"""The confidence's calibration: the fit, its reliability table, and the fit over eval reports."""

import json

import pytest

from backend.errors import DocLensError
from backend.quality.calibration import (
    auroc,
    calibrate_from_reports,
    calibration_splits,
    fit_calibration,
    found,
    reliability,
    worst_band,
)
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
    assert {split for splits in result["per_report"].values() for split in splits} == {"answerable", "left_out", "mix"}
    checks = [check for splits in result["per_report"].values() for check in splits.values()]
    assert all(0.0 <= check["ece"] <= 1.0 and 0.0 <= check["auroc"] <= 1.0 for check in checks)
    assert result["per_report"]["mono.json"]["answerable"]["n"] == 42
    saved = json.loads(target.read_text())
    assert set(saved["weights"]) == set(FEATURES) and saved["fitted_on"]["reports"] == ["mono.json", "old.json"]
    assert worst_band(
        {"bins": [{"confidence": 0.9, "accuracy": 0.5, "n": 49}, {"confidence": 0.3, "accuracy": 0.2, "n": 50}]}
    ) == pytest.approx(0.1)


def test_auroc_tells_found_from_not_found():
    assert auroc([90, 80, 20, 10], [True, True, False, False]) == 1.0
    assert auroc([10, 20, 80, 90], [True, True, False, False]) == 0.0
    assert auroc([50, 50, 50, 50], [True, False, True, False]) == 0.5  # ties count half
    assert auroc([90, 10], [True, True]) == 0.5  # one kind only: nothing to tell apart
    assert auroc([90, 60, 70, 10], [True, True, False, False]) == pytest.approx(0.75)


def test_a_mix_that_reads_calibrated_is_checked_on_each_half():
    """Issue 30: 50 % shown for found answers and for left-out questions averages out in the mix (ECE 0)
    while each half is 50 points off; the check reports every split and their AUROC."""
    answerable = [{"confidence": 50.0, "found": True}] * 40
    left_out = [{"confidence": 50.0, "found": False}] * 40
    splits = calibration_splits(answerable, left_out)
    assert splits["mix"]["ece"] == pytest.approx(0.0)
    assert splits["answerable"]["ece"] == pytest.approx(0.5) and splits["left_out"]["ece"] == pytest.approx(0.5)
    assert splits["answerable"]["worst_band"] == pytest.approx(0.5)  # a band of 30+ questions
    assert splits["mix"]["auroc"] == 0.5 and splits["mix"]["n"] == 80
    assert set(calibration_splits(answerable, [])) == {"answerable", "mix"}


def test_found_reads_the_label_of_the_set():
    assert found({"found": True, "metrics": {"answer_hit@5": 0.0}})  # a page-scored set: a gold page in the top 5
    assert not found({"metrics": {"answer_hit@5": 0.0}}) and found({"metrics": {"answer_hit@5": 1.0}})


def test_a_held_out_fit_never_sees_the_documents_it_is_checked_on(tmp_path):
    """Issue 30: fit on one half of the documents, check on the other (paper_split)."""
    from backend.quality.paper_split import HELD_OUT, TUNE, paper_half

    names = [f"doc_{i:02d}.pdf" for i in range(40)]
    tune = [n for n in names if paper_half(n) == TUNE][:2]
    held = [n for n in names if paper_half(n) == HELD_OUT][:2]
    strong, weak = dict.fromkeys(FEATURES, 0.9), dict.fromkeys(FEATURES, 0.1)
    details = [
        {
            "features": strong if i % 2 else weak,
            "metrics": {"answer_hit@5": float(i % 2)},
            "confidence": 0.0,
            "doc": doc,
        }
        for doc in tune + held
        for i in range(20)
    ]
    path = tmp_path / "set.json"
    path.write_text(json.dumps({"details": {"rerank": details}}))
    result = calibrate_from_reports([path], target=tmp_path / "calibration.json", hold_out=True)
    assert result["questions"] == 40  # the tune half's questions only
    assert result["per_report"]["set.json"]["answerable"]["n"] == 40 and result["checked_on"] == "the held-out half"
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"details": {"rerank": [{k: v for k, v in d.items() if k != "doc"} for d in details]}}))
    with pytest.raises(DocLensError, match="do not name each question's document"):
        calibrate_from_reports([old], target=tmp_path / "calibration.json", hold_out=True)
