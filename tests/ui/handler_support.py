"""What the UI handler tests share besides their fixtures (tests/ui/conftest.py): the knowledge base's
names, the model's settings and replies, and the steps of sending a question through the handlers."""

from __future__ import annotations

import copy
from typing import Any, Optional

from backend.service import DocLens
from tests.support.fake_openai import RecordedRequest
from ui.chat.handlers import ChatHandlers
from ui.common import ALL_DOCUMENTS
from ui.icons import icon

KB = "physics"
EMPTY_KB = "empty"
PHYSICS = "物理公式示例文档.pdf"  # 2 pages: harmonic oscillator formulas, one figure on page 2
QUESTION = "简谐振子的能级公式是什么？"
OFF_TOPIC = "What was the stock price of Apple in 1850?"  # nothing in the KB: low confidence
API_KEY = "sk-ui-secret"
WARN = icon("warn")
REPLY = "The levels are $$E_n=\\hbar\\omega(n+\\tfrac12)$$ [1]. The textbook costs $5 at most."


def model_env(base_url: str, **extra: str) -> dict[str, str]:
    env = {
        "DOCLENS_LLM_BASE_URL": base_url,
        "DOCLENS_LLM_MODEL": "fake-chat",
        "DOCLENS_LLM_VISION_MODEL": "fake-vision",
        "DOCLENS_LLM_API_KEY": API_KEY,
        "DOCLENS_LLM_QPS": "50",  # the shared limiter would space requests 0.5 s apart at the default 2
        "DOCLENS_LLM_MAX_RETRIES": "0",  # a failing model fails at once
        "DOCLENS_RETRIEVAL_QUERY_EXPANSION": "false",  # one chat request per answer, easy to count
    }
    env.update(extra)
    return env


def run_send(
    service: DocLens,
    question: str = QUESTION,
    kb: Optional[str] = KB,
    lock=None,
    turns=None,
    doc_filter: str = ALL_DOCUMENTS,
) -> list[tuple]:
    handlers = ChatHandlers(service)
    # Gradio sends each update before asking for the next: snapshot them the same way.
    return [copy.deepcopy(update) for update in handlers.send(question, kb, doc_filter, [], turns or [], lock)]


def last_message(updates: list[tuple]) -> str:
    return updates[-1][0][-1]["content"]


def answer_text(updates: list[tuple]) -> str:
    """The answer bubble of the final update (a sources message may follow it)."""
    messages = updates[-1][0]
    answers = [m for m in messages if m["role"] == "assistant" and not m.get("metadata")]
    return answers[-1]["content"]


def is_condense(request: RecordedRequest) -> bool:
    return "Follow-up question:" in request.text()


class RecordingProgress:
    """Stands in for gr.Progress (Gradio's, not ours): keeps what the handler reported."""

    def __init__(self) -> None:
        self.calls: list[tuple[Optional[float], Optional[str]]] = []

    def __call__(self, progress: Optional[float], desc: Optional[str] = None, **_: Any) -> None:
        self.calls.append((progress, desc))


def slow_ingest(service: DocLens):
    """The real ingest, started only once the test has cancelled (so the cancel lands on a running job)."""

    def ingest(kb, paths, *, cancel, **options):
        cancel.wait(30)
        return service.ingest(kb, paths, cancel=cancel, **options)

    return ingest
