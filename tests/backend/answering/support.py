"""Shared by the answering tests: sources, a figure and its document, and a client of the fake server."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from backend.answering.answers import answer_stream
from backend.llm.client import LLMClient
from backend.types import Answer, AnswerUpdate, Figure, Source
from tests.conftest import make_settings

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"png-body" * 8
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF" + b"jpeg-body" * 8
WEBP = b"RIFF\x24\x00\x00\x00WEBPVP8 " + b"webp-body" * 8

SOURCES = [
    Source(
        file="paper.pdf",
        doc_id="d1",
        page=3,
        page_end=3,
        chunk_index=4,
        relevance=87.4,
        text="Transformers use attention. The attention weights are computed with softmax. "
        "Energy is given by $$E=mc^2$$ in the appendix.",
    ),
    Source(
        file="notes.pdf",
        doc_id="d2",
        page=7,
        page_end=8,
        chunk_index=1,
        relevance=61.0,
        text="Residual connections help deep networks train. Layer normalization stabilises training.",
    ),
]
FIGURE = Figure(
    id="d1/p3_fig1",
    doc_id="d1",
    file="paper.pdf",
    page=3,
    path="/tmp/unused.png",
    caption="Figure 3: Training loss of the model over 100 epochs",
)
PAGE_TEXT = "Page three text. The loss curve flattens after epoch 40 as shown below."
DOCUMENT_TEXT = "\n\n".join(
    [
        "Introduction paragraph about models.",
        "As Figure 3 shows, the loss decreases quickly in the first epochs.",
        "如图3所示，训练损失在前40轮快速下降。",
        "The validation accuracy is plotted in Figure 30 and is unrelated.",
        "见图 3 的右侧部分，曲线趋于平稳。",
        "Compare with Fig. 3, where the learning rate was lower.",
        "See Fig 3 for the raw values.",
        "图3.1 shows a sub-figure that is not this one.",
        "Figure 3: Training loss of the model over 100 epochs",
    ]
)


def make_client(tmp_path: Path, base_url: Optional[str], **env: str) -> LLMClient:
    settings_env = {
        "DOCLENS_LLM_MODEL": "fake-chat",
        "DOCLENS_LLM_QPS": "50",
        "DOCLENS_LLM_TIMEOUT": "5",
        "DOCLENS_LLM_API_KEY": "sk-answering-test-key",
        **env,
    }
    if base_url:
        settings_env["DOCLENS_LLM_BASE_URL"] = base_url
    return LLMClient(make_settings(tmp_path / "data", **settings_env), backoff_base=0.1)


def final_answer(updates: list[AnswerUpdate]) -> Answer:
    assert updates[-1].done and updates[-1].answer is not None
    assert all(not u.done for u in updates[:-1])
    return updates[-1].answer


def answer_question(
    llm: Optional[LLMClient], question: str, sources: list[Source], confidence: float, **options: Any
) -> Answer:
    """The final Answer of answer_stream (what the service's ask returns), for tests that do not stream."""
    return final_answer(list(answer_stream(llm, question, sources, confidence, **options)))
