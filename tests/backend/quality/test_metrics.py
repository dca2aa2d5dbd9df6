"""Evaluation metrics on hand-built rankings."""

import pytest

from backend.quality.metrics import normalize_answer, question_metrics
from backend.types import Source


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


def test_page_mrr_scores_sets_without_answers():
    """arxiv-dev has empty ``answers``: the page is the metric (hit@k and an MRR on pages)."""
    question = {**QUESTION, "answers": []}
    sources = [src("a.pdf", 1, "title page"), src("b.pdf", 2, "other paper"), src("a.pdf", 2, "gold")]
    m = question_metrics(sources, question)
    assert m["hit@1"] == 0.0 and m["hit@5"] == 1.0
    assert m["page_mrr@10"] == pytest.approx(1 / 3)
    assert m["answer_hit@5"] == 0.0 and m["mrr@10"] == 0.0
    assert question_metrics([], question)["page_mrr@10"] == 0.0
