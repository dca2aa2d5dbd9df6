"""Answers that quote the best passages."""

from __future__ import annotations

from pathlib import Path

from backend.answering.extractive import NO_MODEL_NOTICE, best_excerpt, extractive_answer
from tests.backend.answering.support import SOURCES, answer_question, make_client


def test_extractive_answer_without_a_model(tmp_path: Path) -> None:
    client = make_client(tmp_path, None)
    answer = answer_question(client, "How are the attention weights computed?", SOURCES, 40.0)
    assert answer.mode == "extractive" and answer.notice == NO_MODEL_NOTICE
    assert NO_MODEL_NOTICE in answer.answer
    assert "**[1] paper.pdf, p. 3** · relevance 87%" in answer.answer
    assert "**[2] notes.pdf, pp. 7–8** · relevance 61%" in answer.answer
    assert "> The attention weights are computed with softmax." in answer.answer


def test_best_excerpt_picks_the_sentences_with_most_question_words() -> None:
    text = (
        "Cats sleep a lot. Gradient descent updates the weights. The learning rate controls "
        "the gradient descent step size. Dogs bark."
    )
    excerpt = best_excerpt("What does the learning rate of gradient descent control?", text)
    assert excerpt == "The learning rate controls the gradient descent step size."
    two = best_excerpt("How does gradient descent update the weights and the step size?", text)
    assert two == "Gradient descent updates the weights. The learning rate controls the gradient descent step size."
    chinese = "今天天气很好。注意力机制通过softmax计算权重。我们使用了残差连接。"
    assert best_excerpt("注意力机制如何计算？", chinese) == "注意力机制通过softmax计算权重。"


def test_extractive_answer_reason_line() -> None:
    answer = extractive_answer("attention?", SOURCES, 10.0, "The language model failed (HTTP 500).")
    assert answer.notice == "The language model failed (HTTP 500)."
    assert answer.answer.startswith("_The language model failed (HTTP 500)._")
