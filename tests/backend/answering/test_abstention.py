"""An answer that abstains below ``confidence.abstain_below`` (issue 30 item 3): the user is told plainly
that the documents do not seem to hold the answer, sees the closest passages, and the model is not asked."""

from __future__ import annotations

from pathlib import Path

from backend.answering.answers import answer_updates
from backend.types import Answer, AnswerUpdate, SearchResult
from tests.backend.answering.support import SOURCES, make_client
from tests.support.fake_openai import FakeOpenAI

QUESTION = "Who won the 1998 football world cup?"


def _final(updates: list[AnswerUpdate]) -> Answer:
    answer = updates[-1].answer
    assert updates[-1].done and answer is not None
    return answer


def test_below_the_threshold_the_answer_abstains_without_asking_the_model(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url)
    result = SearchResult(QUESTION, "rerank", 9.6, list(SOURCES), searched_in="paper.pdf")
    answer = _final(list(answer_updates(client, QUESTION, result, None, QUESTION, abstain_below=15.0)))
    assert answer.mode == "abstained" and answer.abstained and answer.quotes_passages
    assert answer.notice == (
        "Your documents do not seem to hold the answer to this question (confidence 10%). "
        "The closest passages follow: closest, not an answer."
    )
    assert answer.answer.startswith(f"_{answer.notice}_") and "**[1] paper.pdf" in answer.answer
    assert answer.sources == SOURCES and len(answer.excerpts) == len(SOURCES)
    assert answer.searched_in == "paper.pdf" and answer.to_dict()["abstained"] is True
    assert fake.chat_requests() == []  # the model was not asked to answer from look-alikes


def test_at_or_above_the_threshold_the_model_answers(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url)
    result = SearchResult(QUESTION, "rerank", 15.0, list(SOURCES))
    answer = _final(list(answer_updates(client, QUESTION, result, None, QUESTION, abstain_below=15.0)))
    assert answer.mode == "llm" and not answer.abstained and answer.to_dict()["abstained"] is False
    assert len(fake.chat_requests()) == 1


def test_without_sources_or_a_threshold_nothing_abstains(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url)
    empty = _final(
        list(answer_updates(client, QUESTION, SearchResult(QUESTION, "rerank", 0.0, []), None, QUESTION, 15.0))
    )
    assert empty.mode == "extractive" and not empty.abstained  # "no passage matches" says it already
    never = SearchResult(QUESTION, "rerank", 1.0, list(SOURCES))
    assert _final(list(answer_updates(client, QUESTION, never, None, QUESTION, abstain_below=0.0))).mode == "llm"


def test_a_question_about_a_document_that_is_not_there_abstains_whatever_the_confidence(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    client = make_client(tmp_path, fake.base_url)
    result = SearchResult(QUESTION, "rerank", 80.0, list(SOURCES), missing_document="results 1998.pdf")
    answer = _final(list(answer_updates(client, QUESTION, result, None, QUESTION, abstain_below=15.0)))
    assert answer.abstained and answer.notice == (
        'No document named "results 1998.pdf" was searched, so the answer to this question is not in your '
        "documents (confidence 80%). The closest passages follow: closest, not an answer."
    )
    assert fake.chat_requests() == []
    kept = _final(list(answer_updates(client, QUESTION, result, None, QUESTION, abstain_below=0.0)))
    assert not kept.abstained and kept.mode == "llm", "abstention turned off: the model answers"
