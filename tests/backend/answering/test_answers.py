"""Model answers streamed from a real HTTP fake, and their fallbacks."""

from __future__ import annotations

from pathlib import Path

from backend.answering.answers import answer_stream
from backend.answering.citations import extract_citations
from backend.processes import free_port
from tests.backend.answering.support import (
    SOURCES,
    answer_question,
    final_answer,
    make_client,
)
from tests.support.fake_openai import FakeOpenAI


def test_answer_stream_streams_and_cites_numbered_sources(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url)
    updates = list(answer_stream(client, "How is attention computed?", SOURCES, 82.0))
    answer = final_answer(updates)
    assert len(updates) > 2  # partial text arrived before the final answer
    assert updates[-2].text.startswith(updates[0].text)
    assert answer.mode == "llm" and answer.confidence == 82.0 and answer.notice == ""
    assert answer.sources == SOURCES
    citations = extract_citations(answer.answer)
    assert citations and all(1 <= n <= len(SOURCES) for n in citations)
    assert "$$E=mc^2$$" in answer.answer and "$x^2$" in answer.answer
    prompt = fake.last_chat().text()
    assert "[1] paper.pdf, p. 3" in prompt and "[2] notes.pdf, pp. 7–8" in prompt


def test_answer_keeps_latex_exactly_and_removes_invented_citations(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url)
    reply = r"The energy is $$E = \frac{1}{2} m v^2$$ with $\alpha \leq 1$ [1] and more [5]."
    fake.queue_reply(reply)
    answer = answer_question(client, "What is the energy?", SOURCES, 70.0)
    assert answer.mode == "llm"
    assert r"$$E = \frac{1}{2} m v^2$$ with $\alpha \leq 1$ [1]" in answer.answer
    assert "[5]" not in answer.answer and "[5]" in answer.notice
    assert extract_citations(answer.answer) == [1]


def test_context_sources_limits_the_numbered_sources(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url, DOCLENS_LLM_CONTEXT_SOURCES="1")
    answer = answer_question(client, "What is attention?", SOURCES, 50.0)
    assert answer.sources == SOURCES[:1]
    assert "[1] paper.pdf" in fake.last_chat().text() and "notes.pdf" not in fake.last_chat().text()


def test_extractive_answer_when_the_endpoint_is_down(tmp_path: Path) -> None:
    client = make_client(tmp_path, f"http://127.0.0.1:{free_port()}/v1")
    updates = list(answer_stream(client, "What is attention?", SOURCES, 40.0))
    answer = final_answer(updates)
    assert answer.mode == "extractive"
    assert answer.notice.startswith("The language model failed (cannot reach")
    assert answer.notice in answer.answer
    assert "sk-answering-test-key" not in answer.answer


def test_a_stream_that_stalls_mid_answer_keeps_what_arrived(tmp_path: Path, fake: FakeOpenAI) -> None:
    """Issue 31 item 5: three chunks, then silence past llm.timeout: the answer is those chunks, ending in
    "…", and says it was cut off; only a stall before any text falls back to quoting passages."""
    client = make_client(tmp_path, fake.base_url, DOCLENS_LLM_TIMEOUT="1")
    fake.queue_reply("DocLens basalt answer from the sources [1], continued at some length.")
    fake.hang_next(4, after_chunks=3)
    answer = final_answer(list(answer_stream(client, "What is attention?", SOURCES, 40.0)))
    assert answer.mode == "llm" and answer.answer == "DocLens basalt answer from the sourc …"
    assert answer.notice.startswith(
        "The model's answer was cut off (nothing more arrived within 1 s (llm.timeout)), so it may be incomplete."
    )
    fake.hang_next(4, after_chunks=0)
    answer = final_answer(list(answer_stream(client, "What is attention?", SOURCES, 40.0)))
    assert answer.mode == "extractive" and "timed out" in answer.notice


def test_an_oversized_reply_is_named_in_the_notice(tmp_path: Path, fake: FakeOpenAI) -> None:
    """Issue 31 item 6: the notice gives the real reason (a reply larger than the limit)."""
    client = make_client(tmp_path, fake.base_url)
    fake.fail_next(200, body={"choices": [{"message": {"role": "assistant", "content": "x" * 3_000_000}}]})
    answer = final_answer(list(answer_stream(client, "What is attention?", SOURCES, 40.0)))
    assert answer.mode == "extractive" and "sent a reply larger than" in answer.notice, answer.notice
    assert "OpenAI-compatible" not in answer.notice


def test_a_stream_cut_off_mid_way_is_marked_and_the_user_is_told(tmp_path: Path, fake: FakeOpenAI) -> None:
    """Issue 11 item 10: the connection closes mid-answer (no finish_reason, no [DONE])."""
    client = make_client(tmp_path, fake.base_url)
    fake.queue_reply("DocLens basalt answer from the sources [1], continued at some length.")
    fake.cut_next(3)
    updates = list(answer_stream(client, "What is attention?", SOURCES, 40.0))
    answer = final_answer(updates)
    assert updates[-2].text == "DocLens basalt answer from the sourc"  # three chunks, then the cut
    assert answer.mode == "llm" and answer.answer == "DocLens basalt answer from the sourc …"
    assert answer.notice.startswith(
        "The model's answer was cut off (the connection closed before the model finished), so it may be incomplete."
    )


def test_no_sources_gives_a_plain_statement(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url)
    answer = answer_question(client, "Anything?", [], 0.0)
    assert "no passage" in answer.answer and answer.sources == []
    assert fake.chat_requests() == []
