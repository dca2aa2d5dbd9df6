"""What the UI handler tests share: one service over a real DocLens (real Milvus Lite file, the bundled
embedder) with one small knowledge base built from one sample PDF, per test module; the model is the
recording FakeOpenAI. Milvus Lite allows one client per store per process, so tests switch the one
service between configurations with ``reconfigure``.

A test module imports the fixtures it uses (``fake_model`` is autouse: importing it is enough).
"""

from __future__ import annotations

import copy
import socket
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest

from backend.service import DocLens
from backend.types import Figure
from tests.conftest import SAMPLES, make_settings
from tests.support.fake_openai import FakeOpenAI, RecordedRequest
from ui.chat_tab import ChatHandlers
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


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ui-handlers") / "data"


@pytest.fixture(scope="module")
def service(data_dir: Path, fake: FakeOpenAI) -> Iterator[DocLens]:
    with DocLens(make_settings(data_dir, **model_env(fake.base_url))) as svc:
        svc.create_kb(KB)
        results = svc.ingest(KB, [SAMPLES / PHYSICS])
        assert [r.status for r in results] == ["indexed"], results
        svc.create_kb(EMPTY_KB)
        yield svc


@pytest.fixture(autouse=True)
def fake_model(service: DocLens, data_dir: Path, fake: FakeOpenAI) -> Iterator[None]:
    """Every test starts on the fake model with nothing recorded; the settings tests change them."""
    fake.reset()
    service.reconfigure(make_settings(data_dir, **model_env(fake.base_url)))
    yield
    fake.reset()  # faults a failed test left queued must not leak into the next one


@pytest.fixture
def figure(service: DocLens) -> Figure:
    figures = service.figures(KB, PHYSICS)
    assert figures, "the physics sample has a figure on page 2"
    return figures[0]


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


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again on leaving: connections are refused


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
