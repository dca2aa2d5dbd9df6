"""Evaluation metrics on hand-built rankings, and the qa file loader."""

import json

import pytest

from backend.errors import DocLensError
from backend.evaluation import ingest_speed, load_questions, normalize_answer, probe_sentence, question_metrics
from backend.types import IngestResult, Source


def src(file, page, text, page_end=None):
    return Source(file=file, doc_id="d", page=page, page_end=page_end or page, chunk_index=0, text=text)


QUESTION = {"question": "q", "answers": ["John Fox", "Fox"], "doc": "a.pdf", "pages": [2], "scanned": False}


def test_answer_normalisation_ignores_case_space_punctuation_and_width():
    assert normalize_answer(" John  Fox! ") == "johnfox"
    assert normalize_answer("ＤＣ漫画，公司") == "dc漫画公司"


def test_hits_and_mrr():
    sources = [src("b.pdf", 2, "nothing"), src("a.pdf", 1, "coach john-fox", page_end=2), src("a.pdf", 2, "x")]
    m = question_metrics(sources, QUESTION)
    assert m["hit@1"] == 0.0 and m["hit@5"] == 1.0
    assert m["answer_hit@1"] == 0.0 and m["answer_hit@5"] == 1.0
    assert m["mrr@10"] == pytest.approx(0.5)
    assert question_metrics([], QUESTION)["mrr@10"] == 0.0


def test_load_questions_samples_with_a_fixed_seed(tmp_path):
    path = tmp_path / "qa.jsonl"
    path.write_text("\n".join(json.dumps({**QUESTION, "id": i}) for i in range(50)), encoding="utf-8")
    first, second = load_questions(path, 10), load_questions(path, 10)
    assert [q["id"] for q in first] == [q["id"] for q in second] and len(first) == 10
    (tmp_path / "bad.jsonl").write_text('{"question": "no answers"}\n', encoding="utf-8")
    with pytest.raises(DocLensError, match="bad.jsonl:1"):
        load_questions(tmp_path / "bad.jsonl")


def test_ingest_speed_splits_native_and_scanned_documents():
    results = [
        IngestResult("a", "indexed", pages=10, ocr_pages=0, seconds=2.0),
        IngestResult("b", "indexed", pages=4, ocr_pages=4, seconds=8.0),
        IngestResult("c", "failed", pages=0, seconds=1.0),
    ]
    speed = ingest_speed(results)
    assert speed["native_pages_per_s"] == 5.0 and speed["scanned_pages_per_s"] == 0.5


def test_probe_sentence_is_a_real_sentence():
    text = "短句。这是一个比较长的句子，用来测试自检功能是否正常工作。结尾"
    assert probe_sentence(text) == "这是一个比较长的句子，用来测试自检功能是否正常工作。"


def _report(path, rows):
    details = [{"features": f, "metrics": {"answer_hit@5": float(hit)}, "confidence": 0.0} for f, hit in rows]
    path.write_text(json.dumps({"details": {"rerank": details[::2], "rerank-unanswerable": details[1::2]}}))
    return path


def test_calibration_is_fitted_on_all_reports_and_checked_per_report(tmp_path):
    from backend.evaluation import calibrate_from_reports, worst_band
    from backend.retrieval.confidence import FEATURES

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


def test_page_mrr_scores_sets_without_answers():
    """arxiv-dev has empty ``answers``: the page is the metric (hit@k and an MRR on pages)."""
    question = {**QUESTION, "answers": []}
    sources = [src("a.pdf", 1, "title page"), src("b.pdf", 2, "other paper"), src("a.pdf", 2, "gold")]
    m = question_metrics(sources, question)
    assert m["hit@1"] == 0.0 and m["hit@5"] == 1.0
    assert m["page_mrr@10"] == pytest.approx(1 / 3)
    assert m["answer_hit@5"] == 0.0 and m["mrr@10"] == 0.0
    assert question_metrics([], question)["page_mrr@10"] == 0.0
