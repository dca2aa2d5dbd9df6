"""The composite reranker on hand-built passages (the weighted signals, the document signal, kinds) and
on two real arXiv papers (the bm25 signal)."""

import json

import pytest

from backend.retrieval.rerank import composite
from backend.service import DocLens
from backend.settings import RerankSettings
from backend.types import Source
from tests.conftest import BENCH, make_settings

ARXIV = BENCH / "arxiv-dev"
PAPERS = ["0803.1139v1", "1301.0676v5"]  # a 4-page and a 20-page paper, formulas in the longer one


def source(text, similarity=None, dense_rank=None, keyword_rank=None, doc="d", bm25_lead=None):
    return Source(
        file=f"{doc}.pdf",
        doc_id=doc,
        page=1,
        page_end=1,
        chunk_index=0,
        text=text,
        similarity=similarity,
        dense_rank=dense_rank,
        keyword_rank=keyword_rank,
        bm25_lead=bm25_lead if bm25_lead is not None else (1.0 / keyword_rank if keyword_rank else 0.0),
    )


def test_signals_are_bounded_and_relevance_is_their_weighted_mean():
    weights = RerankSettings(fuzzy=1, keyword=1, semantic=1, length=1, rank=1, entity=1, bm25=1, document=0)
    candidates = [
        source("Super Bowl 50 was played at Levi's Stadium in Santa Clara, California. " * 3, 0.9, 1, 2),
        source("unrelated text about cooking pasta with tomatoes and basil", 0.72, 2, None),
        source("x", 0.5, None, 1),
    ]
    ranked = composite.rerank("Where was Super Bowl 50 played?", candidates, weights)
    for s in ranked:
        assert set(s.scores) == {*composite.SIGNALS, composite.DOCUMENT}
        assert all(0.0 <= v <= 100.0 for v in s.scores.values())
        # a passage the keyword search did not return has no BM25 to compare: the signal abstains
        counted = [n for n in composite.SIGNALS if s.keyword_rank or n != "bm25"]
        assert s.relevance == pytest.approx(sum(s.scores[name] for name in counted) / len(counted))
        assert 0.0 <= s.relevance <= 100.0
    assert ranked[0].text.startswith("Super Bowl 50")


def test_a_passage_beside_the_best_match_outranks_a_look_alike_from_another_document():
    """Questions are mostly about one document: of two passages that score the same on their own, the one
    whose document holds the best match ranks first, and the document's best passage keeps its own score."""
    weights = RerankSettings()
    best = source("Kublai Khan founded the Yuan dynasty in 1271 and ruled China from Khanbaliq.", 0.90, 1, 1, "yuan")
    beside = source("His reign saw paper money and a postal relay system across the empire.", 0.80, 3, None, "yuan")
    elsewhere = source("His reign saw paper money and a postal relay system across the empire.", 0.80, 2, None, "misc")
    ranked = composite.rerank("What did Kublai Khan's reign see?", [best, elsewhere, beside], weights)
    assert [s.doc_id for s in ranked[:2]] == ["yuan", "yuan"], [(s.doc_id, s.relevance) for s in ranked]
    top = ranked[0]
    assert top is best and top.scores[composite.DOCUMENT] == pytest.approx(top.relevance)
    assert beside.relevance > elsewhere.relevance
    assert (
        beside.scores[composite.DOCUMENT] == pytest.approx(best.relevance)
        and elsewhere.scores[composite.DOCUMENT] < best.relevance
    )


def test_the_bm25_signal_ranks_the_keyword_leader_first_and_spares_dense_only_passages():
    text = "The estimator converges almost surely under the moment condition on the loss."
    leader, follower = source(text, 0.85, 2, 1, bm25_lead=1.0), source(text, 0.85, 1, 2, bm25_lead=0.4)
    dense_only = source(text, 0.85, 3, None)
    ranked = composite.rerank("When does the estimator converge?", [follower, leader, dense_only], RerankSettings())
    assert ranked[0] is leader and leader.scores["bm25"] == 100.0 and follower.scores["bm25"] == 40.0
    without = composite.own_relevance(dense_only.scores, RerankSettings(bm25=0), has_bm25=False)
    assert dense_only.scores["bm25"] == 0.0
    assert composite.own_relevance(dense_only.scores, RerankSettings(), has_bm25=False) == pytest.approx(without)


def test_without_the_document_share_the_relevance_is_the_passage_own():
    candidates = [source("alpha beta gamma " * 10, 0.85, 1, 1, "a"), source("alpha " * 30, 0.75, 2, None, "a")]
    ranked = composite.rerank("alpha beta gamma?", candidates, RerankSettings(document=0))
    weights = RerankSettings()
    counted = [name for name in composite.SIGNALS if name != "bm25"]  # not a keyword hit: bm25 abstains
    own = sum(getattr(weights, n) * ranked[1].scores[n] for n in counted) / sum(getattr(weights, n) for n in counted)
    assert ranked[1].relevance == pytest.approx(own)


def test_reference_list_chunks_lose_to_the_passage_unless_references_are_asked_for():
    weights = RerankSettings()
    text = "Short text clustering with topic models and sparse vectors, evaluated on news titles."
    passage, bibliography = source(text, similarity=0.85), source(text, similarity=0.85)
    bibliography.kind = "references"
    ranked = composite.rerank("How does short text clustering use topic models?", [bibliography, passage], weights)
    assert ranked[0] is passage and bibliography.relevance < passage.relevance
    ranked = composite.rerank(
        "Which publications on short text clustering are cited?", [passage, bibliography], weights
    )
    assert ranked[0] is bibliography  # asked for, the reference list leads the prose that cites it
    strong = source(text, similarity=1.0)
    strong.kind = "references"
    composite.rerank(
        "Which publications on short text clustering are cited?",
        [strong],
        weights.model_copy(update={"references_asked": 2.0}),
    )
    assert strong.relevance <= 100.0  # still a percentage


@pytest.fixture(scope="module")
def papers(tmp_path_factory):
    with DocLens(make_settings(tmp_path_factory.mktemp("papers") / "data")) as svc:
        svc.create_kb("papers")
        files = sorted(p for p in (ARXIV / "docs").iterdir() if p.name.split(" ")[0] in PAPERS)
        results = svc.ingest("papers", files)
        assert len(results) == 2 and all(r.status == "indexed" for r in results), [r.error for r in results]
        yield svc


@pytest.mark.parametrize("question_id", ["seed-123", "seed-157", "seed-177"])
def test_the_keyword_leader_beats_its_look_alike_dense_neighbours(papers, question_id):
    """On a long paper every page of a proof reads alike to the embedding; the page that holds the
    question's rare terms is the BM25 leader. Without the bm25 signal these three questions ranked a
    neighbouring page first while keyword search alone had the right one."""
    lines = (ARXIV / "qa.jsonl").read_text(encoding="utf-8").splitlines()
    q = next(q for q in map(json.loads, lines) if q["id"] == question_id)
    for mode in ("keyword", "rerank"):
        top = papers.search("papers", q["question"], mode=mode, top=5).sources[0]
        assert (top.file, top.page) == (q["doc"], q["pages"][0]), (mode, top.file, top.page, top.scores)
    assert top.scores["bm25"] == pytest.approx(100.0)  # the leader
