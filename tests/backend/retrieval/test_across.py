"""Questions across knowledge bases (backend/retrieval/across.py) through the facade: real Milvus Lite,
real PDFs, the bundled embedder and the recording fake OpenAI server."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from backend.errors import DocLensError
from backend.retrieval.across import share, short_of_dense, short_of_keywords
from backend.retrieval.candidates import Candidates
from backend.retrieval.query_plan import KeywordRun
from backend.service import DocLens
from backend.store.base import ChunkRow, Hit
from tests.conftest import make_settings
from tests.support.fake_openai import FakeOpenAI
from tests.support.text_pdf import write_text_pdf

HARBOUR, MOUNTAIN = "harbour notes", "mountain notes"
LIGHTHOUSE = "The Verity lighthouse was first lit in 1871 by the harbour engineer Ada Quill."
OBSERVATORY = "The Sable observatory stands on the summit at a height of 3120 metres above the sea."
QUESTION = "When was the Verity lighthouse first lit, and how high does the Sable observatory stand?"
FILLER = {
    "tides.pdf": "Tide tables for the harbour list the spring tides and the neap tides of each month.",
    "ferries.pdf": "The ferry timetable gives the crossings to the islands in summer and in winter.",
    "glaciers.pdf": "Glaciers in the valley retreated during the warm decades of the last century.",
    "trails.pdf": "Hiking trails are marked in red and white; the ridge trail closes in the snow season.",
}


def model_env(base_url: str, **extra: str) -> dict[str, str]:
    return {
        "DOCLENS_LLM_BASE_URL": base_url,
        "DOCLENS_LLM_MODEL": "some-model",
        "DOCLENS_LLM_API_KEY": "sk-test",
        "DOCLENS_LLM_QPS": "50",
        "DOCLENS_RETRIEVAL_QUERY_EXPANSION": "false",
        **extra,
    }


def pdf(folder: Path, name: str, sentence: str) -> Path:
    return write_text_pdf(folder / name, [[sentence, f"This page of {name} says nothing else of note."]])


@pytest.fixture(scope="module")
def service(data_dir: Path, fake: FakeOpenAI, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DocLens]:
    folder = tmp_path_factory.mktemp("across-pdfs")
    with DocLens(make_settings(data_dir, **model_env(fake.base_url))) as svc:
        for kb, own, sentence, filler in (
            (HARBOUR, "lighthouse.pdf", LIGHTHOUSE, ("tides.pdf", "ferries.pdf")),
            (MOUNTAIN, "observatory.pdf", OBSERVATORY, ("glaciers.pdf", "trails.pdf")),
        ):
            svc.create_kb(kb)
            paths = [pdf(folder, own, sentence)] + [pdf(folder, name, FILLER[name]) for name in filler]
            paths.append(pdf(folder, "shared.pdf", "Both notebooks keep this page on the weather station."))
            assert {r.status for r in svc.ingest(kb, paths)} == {"indexed"}
        yield svc


@pytest.fixture(autouse=True)
def fresh_fake(fake: FakeOpenAI) -> None:
    fake.reset()


def prompt_of(fake: FakeOpenAI) -> str:
    return "\n".join(str(m.get("content")) for m in fake.last_chat().messages)


def test_a_question_across_two_kbs_gets_one_passage_from_each(service: DocLens, fake: FakeOpenAI) -> None:
    answer = service.ask([HARBOUR, MOUNTAIN], QUESTION)
    prompt = prompt_of(fake)
    assert "1871" in prompt and "3120 metres" in prompt, "the model was given both passages"
    found = {(s.kb, s.file) for s in answer.sources}
    assert {(HARBOUR, "lighthouse.pdf"), (MOUNTAIN, "observatory.pdf")} <= found
    assert {s["kb"] for s in answer.to_dict()["sources"]} >= {HARBOUR, MOUNTAIN}


def test_one_kb_alone_does_not_see_the_other(service: DocLens, fake: FakeOpenAI) -> None:
    service.ask(HARBOUR, QUESTION)
    prompt = prompt_of(fake)
    assert "1871" in prompt and "3120 metres" not in prompt


def test_one_ranking_over_both_not_a_block_per_kb(service: DocLens) -> None:
    result = service.search([HARBOUR, MOUNTAIN], "how high is the Sable observatory above the sea?", top=6)
    assert (result.sources[0].kb, result.sources[0].file) == (MOUNTAIN, "observatory.pdf")
    relevances = [s.relevance for s in result.sources]
    assert relevances == sorted(relevances, reverse=True)
    assert {s.kb for s in result.sources} == {HARBOUR, MOUNTAIN}, "the other KB's passages rank below, interleaved"


def test_the_same_pdf_in_two_kbs_is_two_sources(service: DocLens) -> None:
    result = service.search([HARBOUR, MOUNTAIN], "What do both notebooks keep on the weather station?", top=4)
    shared = [s for s in result.sources if s.file == "shared.pdf"]
    assert {s.kb for s in shared} == {HARBOUR, MOUNTAIN}
    assert len({s.chunk_id for s in shared}) == len(shared), "chunk ids told apart by their knowledge base"


def test_picked_documents_across_kbs(service: DocLens) -> None:
    picked = [f"{HARBOUR}/tides.pdf", "observatory.pdf"]
    result = service.search([HARBOUR, MOUNTAIN], QUESTION, doc=picked, top=10)
    assert {(s.kb, s.file) for s in result.sources} == {(HARBOUR, "tides.pdf"), (MOUNTAIN, "observatory.pdf")}
    with pytest.raises(DocLensError, match="none of the knowledge bases"):
        service.search([HARBOUR, MOUNTAIN], QUESTION, doc=["nowhere.pdf"])


def test_a_question_naming_a_document_searches_only_its_kb(service: DocLens) -> None:
    result = service.search([HARBOUR, MOUNTAIN], 'In the document "glaciers.pdf", what retreated?', top=5)
    assert {(s.kb, s.file) for s in result.sources} == {(MOUNTAIN, "glaciers.pdf")}
    assert result.searched_in == "glaciers.pdf"


def test_a_follow_up_keeps_the_scope(service: DocLens, fake: FakeOpenAI) -> None:
    """The condensed question searches the same KBs and picked documents as the question."""
    fake.queue_reply("How high does the Sable observatory stand above the sea?", "It stands at 3120 metres.")
    history = [
        {"role": "user", "content": "Tell me about the observatory"},
        {"role": "assistant", "content": "It is high."},
    ]
    answer = service.ask([HARBOUR, MOUNTAIN], "and its height?", history=history, doc=["observatory.pdf", "tides.pdf"])
    assert {s.file for s in answer.sources} <= {"observatory.pdf", "tides.pdf"}
    assert answer.sources[0].file == "observatory.pdf"


# -- each knowledge base's share of the hits (across.share) ------------------------------------------


def hits(*scores: float) -> list[Hit]:
    return [Hit(ChunkRow(f"c{i}", "d", "a.pdf", 1, 1, i, "text"), s) for i, s in enumerate(scores)]


def found(dense: list[list[Hit]] = (), keyword: list[list[Hit]] = ()) -> list[Candidates]:
    return [
        Candidates(None, [d] if dense else [], [KeywordRun("en", k)] if keyword else [], {}, [])  # type: ignore[arg-type]
        for d, k in zip(dense or [[]] * len(keyword), keyword or [[]] * len(dense))
    ]


def test_each_kb_first_gives_its_share_of_a_list() -> None:
    assert (share(30, 10), share(30, 10, spread=5), share(30, 1), share(30, 100), share(30, 4, spread=5)) == (
        3,
        15,
        30,
        1,
        30,
    )


def test_keyword_hits_are_asked_again_only_when_another_kb_falls_short() -> None:
    full = found(keyword=[hits(9, 8, 7), hits(5, 4, 3), hits(2, 1, 1)])
    assert short_of_keywords(full, asked=3, top=9) == []  # the interleave keeps ranks 1-3 of each: all there
    one_short = found(keyword=[hits(9, 8, 7), hits(5), hits(2, 1, 1)])
    assert short_of_keywords(one_short, asked=3, top=9) == [0, 2]  # room for their 4th ranks


def test_dense_hits_are_asked_again_of_a_kb_whose_share_all_ranks_high() -> None:
    lists = found(dense=[hits(0.9, 0.88, 0.87), hits(0.5, 0.4, 0.3), hits(0.86, 0.2)])
    # the union's best 4: 0.9, 0.88, 0.87, 0.86; only the first's share may hide more above 0.86
    assert short_of_dense(lists, asked=3, top=4) == [0]
    assert short_of_dense(lists, asked=3, top=9) == [0, 1]  # fewer than 9 in all: every full share
