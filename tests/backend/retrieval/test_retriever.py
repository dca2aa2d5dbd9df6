"""Retrieval on a small real knowledge base built from bench documents (Milvus Lite, real embeddings)."""

from __future__ import annotations

import json

import pytest

from backend.errors import DocLensError
from backend.service import DocLens
from tests.conftest import BENCH, make_settings

DOCS = [
    BENCH / "dev-zh" / "docs" / "zh_001.pdf",
    BENCH / "dev-zh" / "docs" / "zh_002.pdf",
    BENCH / "dev-en" / "docs" / "en_001.pdf",
]
MODES = ["dense", "keyword", "hybrid", "rerank"]


def questions(lang: str, doc: str) -> list[dict]:
    lines = (BENCH / f"dev-{lang}" / "qa.jsonl").read_text(encoding="utf-8").splitlines()
    return [q for q in map(json.loads, lines) if q["doc"] == doc]


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    settings = make_settings(tmp_path_factory.mktemp("search") / "data")
    with DocLens(settings) as svc:
        svc.create_kb("bench")
        results = svc.ingest("bench", DOCS)
        assert all(r.status == "indexed" for r in results), [r.error for r in results]
        yield svc


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("lang,doc,index", [("zh", "zh_001.pdf", 0), ("en", "en_001.pdf", 0)])
def test_each_mode_finds_the_gold_page(service, mode, lang, doc, index):
    q = questions(lang, doc)[index]
    result = service.search("bench", q["question"], mode=mode, top=5)
    assert result.mode == mode and result.sources
    assert any(s.file == q["doc"] and s.page in q["pages"] for s in result.sources), [
        (s.file, s.page) for s in result.sources
    ]


def test_scores_relevance_and_confidence_are_bounded(service):
    q = questions("en", "en_001.pdf")[1]
    for mode in MODES:
        result = service.search("bench", q["question"], mode=mode, top=10)
        assert 0.0 <= result.confidence <= 100.0
        for s in result.sources:
            assert 0.0 <= s.relevance <= 100.0
            assert set(s.scores) == {"fuzzy", "keyword", "semantic", "length", "rank", "entity", "bm25", "document"}
            assert all(0.0 <= v <= 100.0 for v in s.scores.values())


def test_keyword_only_hits_get_a_real_semantic_score(service):
    result = service.search("bench", "Super Bowl 50 Denver Broncos Carolina Panthers", mode="keyword", top=10)
    keyword_only = [s for s in result.sources if s.dense_rank is None]
    assert keyword_only, "expected some hits found only by the keyword search"
    for s in keyword_only:
        assert s.similarity is not None and 0.0 < s.similarity <= 1.0
    hybrid = service.search("bench", "Super Bowl 50 Denver Broncos Carolina Panthers", mode="rerank", top=20)
    assert all(s.similarity is not None for s in hybrid.sources)


def test_doc_filter_limits_the_sources(service):
    result = service.search("bench", "漫画公司", doc="zh_002.pdf", top=10)
    assert result.sources and {s.file for s in result.sources} == {"zh_002.pdf"}
    with pytest.raises(DocLensError, match="not in knowledge base"):
        service.search("bench", "x", doc="missing.pdf")


def test_answer_matching_question_ranks_its_answer_first(service):
    q = questions("zh", "zh_001.pdf")[0]
    result = service.search("bench", q["question"], mode="rerank", top=3)
    assert any("DC漫画" in s.text for s in result.sources[:3])
    assert result.latency_ms > 0


def test_empty_question_and_empty_kb_are_clear_errors(service):
    with pytest.raises(DocLensError, match="empty"):
        service.search("bench", "   ")
    service.create_kb("empty")
    with pytest.raises(DocLensError, match="no documents"):
        service.search("empty", "anything")
    service.delete_kb("empty")


def test_eval_on_an_existing_kb_reports_every_mode(service, tmp_path):
    from backend.quality.evaluation import format_report, run_eval

    qa = tmp_path / "qa.jsonl"
    picked = questions("zh", "zh_001.pdf")[:4] + questions("en", "en_001.pdf")[:4]
    blank = {**picked[0], "id": "blank", "question": " "}  # the bench sets hold a few: a miss, not a crash
    qa.write_text("\n".join(json.dumps(q, ensure_ascii=False) for q in picked + [blank]), encoding="utf-8")
    report = run_eval(service, qa, tmp_path, kb_name="bench", modes=MODES, unanswerable=True, keep_details=True)
    assert report["questions"] == 9 and report["docs"] == 3 and report["chunks"] > 0
    assert report["ingest"] is None
    for mode in MODES:
        metrics = report["modes"][mode]["all"]
        assert set(metrics) == {
            "hit@1",
            "hit@5",
            "hit@10",
            "answer_hit@1",
            "answer_hit@5",
            "answer_hit@10",
            "mrr@10",
            "page_mrr@10",
        }
        assert metrics["hit@10"] >= metrics["hit@5"] >= metrics["hit@1"]
        assert report["modes"][mode]["latency_ms"]["p95"] >= report["modes"][mode]["latency_ms"]["p50"] > 0
    assert report["modes"]["rerank"]["all"]["answer_hit@5"] >= 0.66
    assert 0.0 <= report["calibration"]["ece"] <= 1.0
    left_out = report["unanswerable"]  # each question asked with its own document left out
    assert left_out["questions"] == 9
    assert left_out["answer_hit@5"] < report["modes"]["rerank"]["all"]["answer_hit@5"]
    assert sum(b["n"] for b in report["calibration"]["bins"]) == 18
    splits = report["calibration_splits"]  # issue 30: answerable and left-out questions apart, and mixed
    assert [splits[s]["n"] for s in ("answerable", "left_out", "mix")] == [9, 9, 18]
    assert all(0.0 <= check["auroc"] <= 1.0 for check in splits.values())
    assert "confidence left_out" in format_report(report)
    # issue 30 item 3: every question records whether the answer abstained, and the rates are printed
    asked = report["details"]["rerank"] + report["details"]["rerank-unanswerable"]
    assert all(isinstance(d["abstained"], bool) for d in asked)
    abstention = report["abstention"]
    assert abstention["threshold"] == service.settings.confidence.abstain_below
    assert abstention["left_out"] == pytest.approx(sum(d["abstained"] for d in asked[9:]) / 9, abs=1e-4)
    assert "abstains below" in format_report(report)
    assert "rerank" in format_report(report)
    assert [kb.name for kb in service.list_kbs()] == ["bench"]  # an existing KB is kept


def test_eval_can_ask_with_a_document_picked_its_own_or_another(service, tmp_path):
    from backend.quality.evaluation import format_report, run_eval

    qa = tmp_path / "qa.jsonl"
    asked = questions("zh", "zh_001.pdf")[:3]
    qa.write_text("\n".join(json.dumps(q, ensure_ascii=False) for q in asked), encoding="utf-8")
    report = run_eval(
        service, qa, tmp_path, kb_name="bench", modes=["rerank"], unanswerable=True, keep_details=True, picked=True
    )
    assert report["modes"]["rerank"]["all"]["hit@5"] == 1.0  # its own document picked
    assert report["unanswerable"]["answer_hit@5"] < 1.0  # the next document picked instead
    assert "unanswerable (another document picked)" in format_report(report)


def test_selftest_finds_its_own_chunks(service):
    from backend.quality.selftest import selftest

    report = selftest(service, "bench", samples=10)
    assert report["samples"] == 10
    assert report["chunk_top5"] >= 0.8 and report["page_top5"] >= report["chunk_top5"]


def test_eval_without_a_kb_ingests_into_a_temporary_one_and_drops_it(service, tmp_path):
    from backend.quality.evaluation import run_eval

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "en_001.pdf").write_bytes(DOCS[2].read_bytes())
    qa = tmp_path / "qa.jsonl"
    qa.write_text("\n".join(json.dumps(q) for q in questions("en", "en_001.pdf")[:3]), encoding="utf-8")
    before = [kb.name for kb in service.list_kbs()]
    report = run_eval(service, qa, docs, modes=["rerank"])
    assert report["docs"] == 1 and report["pages"] == 3
    assert report["ingest"]["seconds"] > 0 and report["ingest"]["native_pages_per_s"] > 0
    assert report["modes"]["rerank"]["all"]["hit@5"] == 1.0
    assert [kb.name for kb in service.list_kbs()] == before
