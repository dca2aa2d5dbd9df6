"""Questions across languages on a real mixed library: an English and a Chinese bench PDF in one knowledge base
(Milvus Lite, real embeddings), asked in the other language, no model configured."""

from __future__ import annotations

import json
import statistics

import pytest

from backend.quality.metrics import source_has_answer
from backend.service import DocLens
from backend.settings import with_changes
from tests.conftest import BENCH, make_settings

ENGLISH_DOC, CHINESE_DOC = "xde_000.pdf", "xdz_001.pdf"


def questions(bench_set: str, doc: str) -> list[dict]:
    lines = (BENCH / bench_set / "qa.jsonl").read_text(encoding="utf-8").splitlines()
    return [q for q in map(json.loads, lines) if q["doc"] == doc]


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    settings = make_settings(tmp_path_factory.mktemp("crosslingual") / "data")
    with DocLens(settings) as svc:
        svc.create_kb("mixed")
        results = svc.ingest(
            "mixed", [BENCH / "xl-dev-zh2en" / "docs" / ENGLISH_DOC, BENCH / "xl-dev-en2zh" / "docs" / CHINESE_DOC]
        )
        assert all(r.status == "indexed" for r in results), [r.error for r in results]
        yield svc


def hits_at_5(service, qs: list[dict], mode: str) -> list[tuple[bool, float]]:
    found = []
    for q in qs:
        result = service.search("mixed", q["question"], mode=mode, top=5)
        found.append((any(source_has_answer(s, q["answers"]) for s in result.sources), result.confidence))
    return found


@pytest.mark.parametrize("bench_set,doc", [("xl-dev-zh2en", ENGLISH_DOC), ("xl-dev-en2zh", CHINESE_DOC)])
def test_the_default_mode_is_not_below_dense_search_across_languages(service, bench_set, doc):
    qs = questions(bench_set, doc)
    rerank = sum(hit for hit, _ in hits_at_5(service, qs, "rerank"))
    dense = sum(hit for hit, _ in hits_at_5(service, qs, "dense"))
    assert rerank >= dense, (rerank, dense, len(qs))


@pytest.mark.parametrize("bench_set,doc", [("xl-dev-zh2en", ENGLISH_DOC), ("xl-dev-en2zh", CHINESE_DOC)])
def test_found_answers_are_not_shown_as_untrustworthy(service, bench_set, doc):
    # At first ~1 % confidence for cross-lingual questions whose answer was in the top five. Then, in this
    # mixed library, en->zh found answers averaged 23 % and the missed ones 28 %: the other language's
    # passages below a same-language top lent it their scores. Now ~46 % found, ~14 % missed (zh->en ~70 %).
    results = hits_at_5(service, questions(bench_set, doc), "rerank")
    found = [confidence for hit, confidence in results if hit]
    missed = [confidence for hit, confidence in results if not hit]
    assert found and statistics.fmean(found) >= 35.0, found
    assert not missed or statistics.fmean(missed) < statistics.fmean(found), (missed, found)


def test_passages_in_the_other_language_are_scored_across_languages(service):
    q = questions("xl-dev-zh2en", ENGLISH_DOC)[0]
    result = service.search("mixed", q["question"], mode="rerank", top=10)
    assert {s.file for s in result.sources} >= {ENGLISH_DOC}
    for s in result.sources:
        assert s.bridged == (s.lang == "en"), (s.file, s.lang)
        assert s.scores["fuzzy"] == 0.0 or not s.bridged


def test_the_hubness_correction_finds_more_answers_across_languages(service):
    # Without it a few English passages sat near every Chinese question (one quoting 樞密院 topped unrelated
    # questions); over xl-dev-zh2en dense search found 0.817 of the answers in its top five, 0.887 with it.
    qs = questions("xl-dev-zh2en", ENGLISH_DOC) + questions("xl-dev-en2zh", CHINESE_DOC)
    corrected = sum(hit for hit, _ in hits_at_5(service, qs, "dense"))
    settings = service.settings
    service.reconfigure(with_changes(settings, {"retrieval": {"hub_correction": 0.0}}))
    try:
        uncorrected = sum(hit for hit, _ in hits_at_5(service, qs, "dense"))
    finally:
        service.reconfigure(settings)
    assert corrected > uncorrected, (corrected, uncorrected, len(qs))
