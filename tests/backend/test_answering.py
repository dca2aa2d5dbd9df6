"""Answering: prompts, citations, streaming, fallbacks, figures and summaries against a real HTTP fake."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Iterator, Optional

import pytest

from backend.answering import (
    NO_MODEL_NOTICE,
    AnswerUpdate,
    answer_about_figure,
    answer_question,
    answer_stream,
    best_excerpt,
    build_prompt,
    condense_question,
    detect_image_mime,
    extract_citations,
    extractive_answer,
    fallback_summary,
    figure_context,
    sample_text,
    summarize_document,
    validate_citations,
)
from backend.errors import LLMError
from backend.llm import LLMClient
from backend.types import Answer, Figure, Source
from tests.conftest import make_settings
from tests.support.fake_openai import FakeOpenAI, images_in

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"png-body" * 8
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF" + b"jpeg-body" * 8
WEBP = b"RIFF\x24\x00\x00\x00WEBPVP8 " + b"webp-body" * 8

SOURCES = [
    Source(file="paper.pdf", doc_id="d1", page=3, page_end=3, chunk_index=4, relevance=87.4,
           text="Transformers use attention. The attention weights are computed with softmax. "
                "Energy is given by $$E=mc^2$$ in the appendix."),
    Source(file="notes.pdf", doc_id="d2", page=7, page_end=8, chunk_index=1, relevance=61.0,
           text="Residual connections help deep networks train. Layer normalization stabilises training."),
]
FIGURE = Figure(id="d1/p3_fig1", doc_id="d1", file="paper.pdf", page=3, path="/tmp/unused.png",
                caption="Figure 3: Training loss of the model over 100 epochs")
PAGE_TEXT = "Page three text. The loss curve flattens after epoch 40 as shown below."
DOCUMENT_TEXT = "\n\n".join([
    "Introduction paragraph about models.",
    "As Figure 3 shows, the loss decreases quickly in the first epochs.",
    "如图3所示，训练损失在前40轮快速下降。",
    "The validation accuracy is plotted in Figure 30 and is unrelated.",
    "见图 3 的右侧部分，曲线趋于平稳。",
    "Compare with Fig. 3, where the learning rate was lower.",
    "See Fig 3 for the raw values.",
    "图3.1 shows a sub-figure that is not this one.",
    "Figure 3: Training loss of the model over 100 epochs",
])


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def make_client(tmp_path: Path, base_url: Optional[str], **env: str) -> LLMClient:
    settings_env = {"DOCLENS_LLM_MODEL": "fake-chat", "DOCLENS_LLM_QPS": "50", "DOCLENS_LLM_TIMEOUT": "5",
                    "DOCLENS_LLM_API_KEY": "sk-answering-test-key", **env}
    if base_url:
        settings_env["DOCLENS_LLM_BASE_URL"] = base_url
    return LLMClient(make_settings(tmp_path / "data", **settings_env), backoff_base=0.1)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def final_answer(updates: list[AnswerUpdate]) -> Answer:
    assert updates[-1].done and updates[-1].answer is not None
    assert all(not u.done for u in updates[:-1])
    return updates[-1].answer


# ---------------------------------------------------------------- prompts


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


def test_build_prompt_language_and_history() -> None:
    history = [("What is attention?", "A weighting of tokens [1]."),
               {"role": "user", "content": "And softmax?"}, {"role": "assistant", "content": "It normalises."}]
    messages = build_prompt("它是怎么计算的？", SOURCES, history=history)
    assert "Chinese" in messages[0]["content"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert messages[1]["content"] == "What is attention?"
    assert "English" in build_prompt("What is it?", SOURCES)[0]["content"]
    assert "Chinese" in build_prompt("What is it?", SOURCES, language="zh")[0]["content"]


# ---------------------------------------------------------------- citations


def test_extract_citations_handles_lists_ranges_and_ignores_formulas() -> None:
    text = "Attention [2] uses softmax [1, 3]. See also [4-5] and 【6】. $a[9]$ and $$b[8]$$ are math [2]."
    assert extract_citations(text) == [2, 1, 3, 4, 5, 6]
    assert extract_citations("a [link](http://x) here") == []


def test_validate_citations_drops_numbers_outside_the_sources() -> None:
    cleaned, removed = validate_citations("Yes [1][7]. Also [2, 9]. Formula $x[7]$ stays.", 2)
    assert removed == [7, 9]
    assert cleaned == "Yes [1]. Also [2]. Formula $x[7]$ stays."
    unchanged, none_removed = validate_citations("Fine [1, 2].", 2)
    assert unchanged == "Fine [1, 2]." and none_removed == []


# ---------------------------------------------------------------- LLM answers


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


# ---------------------------------------------------------------- extractive answers


def test_extractive_answer_without_a_model(tmp_path: Path) -> None:
    client = make_client(tmp_path, None)
    answer = answer_question(client, "How are the attention weights computed?", SOURCES, 40.0)
    assert answer.mode == "extractive" and answer.notice == NO_MODEL_NOTICE
    assert NO_MODEL_NOTICE in answer.answer
    assert "**[1] paper.pdf, p. 3** · relevance 87%" in answer.answer
    assert "**[2] notes.pdf, pp. 7–8** · relevance 61%" in answer.answer
    assert "> The attention weights are computed with softmax." in answer.answer


def test_extractive_answer_when_the_endpoint_is_down(tmp_path: Path) -> None:
    client = make_client(tmp_path, f"http://127.0.0.1:{closed_port()}/v1")
    updates = list(answer_stream(client, "What is attention?", SOURCES, 40.0))
    answer = final_answer(updates)
    assert answer.mode == "extractive"
    assert answer.notice.startswith("The language model failed (cannot reach")
    assert answer.notice in answer.answer
    assert "sk-answering-test-key" not in answer.answer


def test_model_failure_mid_answer_becomes_extractive(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url, DOCLENS_LLM_TIMEOUT="1")
    fake.hang_next(4, after_chunks=1)
    answer = final_answer(list(answer_stream(client, "What is attention?", SOURCES, 40.0)))
    assert answer.mode == "extractive" and "timed out" in answer.notice


def test_a_stream_cut_off_mid_way_is_marked_and_the_user_is_told(tmp_path: Path, fake: FakeOpenAI) -> None:
    """Issue 11 item 10: the connection closes mid-answer (no finish_reason, no [DONE])."""
    client = make_client(tmp_path, fake.base_url)
    fake.queue_reply("DocLens basalt answer from the sources [1], continued at some length.")
    fake.cut_next(3)
    updates = list(answer_stream(client, "What is attention?", SOURCES, 40.0))
    answer = final_answer(updates)
    assert updates[-2].text == "DocLens basalt answer from the sourc"  # three chunks, then the cut
    assert answer.mode == "llm" and answer.answer == "DocLens basalt answer from the sourc …"
    assert answer.notice.startswith("The model's answer was cut off (the connection closed before the model "
                                    "finished), so it may be incomplete.")


def test_no_sources_gives_a_plain_statement(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url)
    answer = answer_question(client, "Anything?", [], 0.0)
    assert "no passage" in answer.answer and answer.sources == []
    assert fake.chat_requests() == []


def test_best_excerpt_picks_the_sentences_with_most_question_words() -> None:
    text = ("Cats sleep a lot. Gradient descent updates the weights. The learning rate controls "
            "the gradient descent step size. Dogs bark.")
    excerpt = best_excerpt("What does the learning rate of gradient descent control?", text)
    assert excerpt == "The learning rate controls the gradient descent step size."
    two = best_excerpt("How does gradient descent update the weights and the step size?", text)
    assert two == "Gradient descent updates the weights. The learning rate controls the gradient descent step size."
    chinese = "今天天气很好。注意力机制通过softmax计算权重。我们使用了残差连接。"
    assert best_excerpt("注意力机制如何计算？", chinese) == "注意力机制通过softmax计算权重。"


# ---------------------------------------------------------------- multi-turn


def test_condense_question_uses_history(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url)
    fake.queue_reply("Standalone question: How is the attention weight of a transformer computed?")
    history = [{"role": "user", "content": "What is a transformer?"},
               {"role": "assistant", "content": "A model built on attention [1]."}]
    standalone = condense_question(client, history, "How is its weight computed?")
    assert standalone == "How is the attention weight of a transformer computed?"
    prompt = fake.last_chat().text()
    assert "What is a transformer?" in prompt and "How is its weight computed?" in prompt


def test_condense_question_skips_the_model_without_history_and_on_failure(tmp_path: Path,
                                                                          fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url, DOCLENS_LLM_MAX_RETRIES="0")
    assert condense_question(client, [], "What is attention?") == "What is attention?"
    assert fake.chat_requests() == []
    fake.fail_next(500)
    history = [("What is a transformer?", "A model.")]
    assert condense_question(client, history, "And its loss?") == "And its loss?"
    assert condense_question(make_client(tmp_path / "x", None), history, "And its loss?") == "And its loss?"


# ---------------------------------------------------------------- figures


def test_figure_context_gathers_caption_page_and_references() -> None:
    context = figure_context(FIGURE, PAGE_TEXT, DOCUMENT_TEXT, max_chars=3000)
    assert "Caption: Figure 3: Training loss" in context
    assert "Text of page 3:" in context and "flattens after epoch 40" in context
    for mention in ("As Figure 3 shows", "如图3所示", "见图 3 的右侧", "Compare with Fig. 3", "See Fig 3"):
        assert mention in context
    assert "Figure 30" not in context and "图3.1" not in context
    short = figure_context(FIGURE, PAGE_TEXT * 50, DOCUMENT_TEXT * 20, max_chars=600)
    assert len(short) <= 600 and short.startswith("Caption: Figure 3")


def test_detect_image_mime() -> None:
    assert detect_image_mime(PNG) == "image/png"
    assert detect_image_mime(JPEG) == "image/jpeg"
    assert detect_image_mime(WEBP) == "image/webp"
    assert detect_image_mime(b"unknown", default="image/png") == "image/png"


def test_answer_about_figure_sends_image_and_context_to_vision_model(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url, DOCLENS_LLM_VISION_MODEL="fake-vision")
    context = figure_context(FIGURE, PAGE_TEXT, DOCUMENT_TEXT)
    # The stored MIME type is wrong on purpose: the bytes are JPEG and that is what must be sent.
    answer = answer_about_figure(client, "What does the loss do?", FIGURE, JPEG, "image/png", context,
                                 SOURCES, 77.0)
    assert answer.mode == "vision" and answer.figure == FIGURE and answer.confidence == 77.0
    assert answer.answer.startswith("About figure p3 of paper.pdf (Figure 3: Training loss")
    request = fake.vision_requests()[-1]
    assert request.body["model"] == "fake-vision"
    assert images_in(request) == [("image/jpeg", JPEG)]
    text = request.text()
    assert "paper.pdf, page 3" in text and "Figure 3: Training loss of the model" in text
    assert "flattens after epoch 40" in text and "What does the loss do?" in text


def test_vision_400_falls_back_to_a_text_answer(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url)
    fake.fail_next(400, body={"error": {"message": "This model does not support image input"}},
                   match=lambda r: r.is_vision)
    context = figure_context(FIGURE, PAGE_TEXT, DOCUMENT_TEXT)
    answer = answer_about_figure(client, "What does the loss do?", FIGURE, PNG, "image/png", context, SOURCES, 60.0)
    assert answer.mode == "vision-fallback"
    assert "does not accept images" in answer.notice
    assert answer.answer.startswith("About figure p3 of paper.pdf")
    chats = fake.chat_requests()
    assert len(chats) == 2 and chats[0].is_vision and not chats[1].is_vision
    assert "flattens after epoch 40" in chats[1].text()


def test_figure_question_without_a_model_quotes_the_context(tmp_path: Path) -> None:
    client = make_client(tmp_path, None)
    context = figure_context(FIGURE, PAGE_TEXT, DOCUMENT_TEXT)
    answer = answer_about_figure(client, "When does the loss flatten?", FIGURE, PNG, "image/png", context,
                                 SOURCES, 30.0)
    assert answer.mode == "extractive" and answer.notice == NO_MODEL_NOTICE
    assert answer.answer.startswith("About figure p3 of paper.pdf")
    assert "flattens after epoch 40" in answer.answer


# ---------------------------------------------------------------- summaries


def test_summarize_document_samples_start_middle_and_end(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url)
    chunks = [f"Chunk {i:03d} " + "text " * 100 for i in range(100)]  # about 51k characters
    fake.queue_reply("## Summary\n\n- Key point with $$E=mc^2$$ and $\\beta$.")
    summary = summarize_document(client, "long.pdf", chunks)
    assert summary == "## Summary\n\n- Key point with $$E=mc^2$$ and $\\beta$."
    prompt = fake.last_chat().text()
    assert "long.pdf" in prompt and "LaTeX" in prompt
    assert "Chunk 000" in prompt and "Chunk 050" in prompt and "Chunk 099" in prompt
    assert len(sample_text(chunks)) <= 12100
    assert sample_text(["short one", "short two"]) == "short one\n\nshort two"


def test_summary_without_a_model(tmp_path: Path) -> None:
    with pytest.raises(LLMError):
        summarize_document(make_client(tmp_path, None), "a.pdf", ["text"])
    summary = fallback_summary("a.pdf", ["First passage with $x^2$.", "Second passage."])
    assert summary.startswith("**a.pdf**") and "No language model is configured" in summary
    assert "> First passage with $x^2$." in summary and "> Second passage." in summary


def test_extractive_answer_reason_line() -> None:
    answer = extractive_answer("attention?", SOURCES, 10.0, "The language model failed (HTTP 500).")
    assert answer.notice == "The language model failed (HTTP 500)."
    assert answer.answer.startswith("_The language model failed (HTTP 500)._")
