"""Prompts: numbered sources, language, history, and condensed follow-up questions."""

from __future__ import annotations

from pathlib import Path

from backend.answering.prompts import build_prompt, condense_question
from tests.backend.answering.support import SOURCES, make_client
from tests.support.fake_openai import FakeOpenAI


def test_build_prompt_numbers_sources_with_file_and_page() -> None:
    messages = build_prompt("How is attention computed?", SOURCES)
    system, user = messages[0]["content"], messages[-1]["content"]
    assert messages[0]["role"] == "system" and messages[-1]["role"] == "user"
    assert "[1] paper.pdf, p. 3\nTransformers use attention." in user
    assert "[2] notes.pdf, pp. 7–8\nResidual connections" in user
    assert user.rstrip().endswith("Question: How is attention computed?")
    assert "[1]" in system and "do not contain the answer" in system.replace("does not", "do not")
    assert "$...$" in system and "$$...$$" in system
    assert "$$E=mc^2$$" in user  # formulas in the sources reach the model untouched
    # a formula kept only as an image: its OCR reading is not to be passed off as the formula (issue 29)
    assert '"[formula image …, OCR: …]"' in system and "never present that reading as the formula" in system


def test_build_prompt_language_and_history() -> None:
    history = [
        ("What is attention?", "A weighting of tokens [1]."),
        {"role": "user", "content": "And softmax?"},
        {"role": "assistant", "content": "It normalises."},
    ]
    messages = build_prompt("它是怎么计算的？", SOURCES, history=history)
    assert "Chinese" in messages[0]["content"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert messages[1]["content"] == "What is attention?"
    assert "English" in build_prompt("What is it?", SOURCES)[0]["content"]
    assert "Chinese" in build_prompt("What is it?", SOURCES, language="zh")[0]["content"]


def test_condense_question_uses_history(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url)
    fake.queue_reply("Standalone question: How is the attention weight of a transformer computed?")
    history = [
        {"role": "user", "content": "What is a transformer?"},
        {"role": "assistant", "content": "A model built on attention [1]."},
    ]
    standalone = condense_question(client, history, "How is its weight computed?")
    assert standalone == "How is the attention weight of a transformer computed?"
    prompt = fake.last_chat().text()
    assert "What is a transformer?" in prompt and "How is its weight computed?" in prompt


def test_condense_question_skips_the_model_without_history_and_on_failure(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url, DOCLENS_LLM_MAX_RETRIES="0")
    assert condense_question(client, [], "What is attention?") == "What is attention?"
    assert fake.chat_requests() == []
    fake.fail_next(500)
    history = [("What is a transformer?", "A model.")]
    assert condense_question(client, history, "And its loss?") == "And its loss?"
    assert condense_question(make_client(tmp_path / "x", None), history, "And its loss?") == "And its loss?"
