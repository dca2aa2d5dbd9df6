"""UI handlers over a stub service: readable errors, figure lock, history, settings, uploads."""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator, Optional

import gradio as gr
import pytest
from pydantic import SecretStr

from backend.errors import KnowledgeBaseError, LLMError, SettingsError
from backend.settings import Settings
from backend.types import Answer, IngestResult, ProgressEvent, Source
from ui import panels
from ui.app import parse_auth
from ui.chat_tab import ChatHandlers, normalize_messages
from ui.common import ALL_DOCUMENTS
from ui.kb_tab import KBHandlers, progress_text, results_markdown, uploaded_files
from ui.latex import CURRENCY_HTML
from ui.settings_tab import SettingsHandlers, key_status

SOURCE = Source(file="a.pdf", doc_id="d1", page=3, page_end=3, chunk_index=0, text="E = mc^2 costs $5",
                relevance=87.0, scores={"semantic": 80.0, "keyword": 40.0})


class StubService:
    """Just enough of DocLens for the handlers; records how it was called."""

    def __init__(self, stream: Optional[list[Any]] = None, error: Optional[BaseException] = None):
        self.settings = Settings(data_dir=Path("/tmp/doclens-ui-stub"))
        self.stream = stream if stream is not None else [
            "It costs $5 ", "and $$E=mc^2$$.", Answer("It costs $5 and $$E=mc^2$$.", "llm", 72.0, [SOURCE])]
        self.error = error
        self.calls: list[dict[str, Any]] = []
        self.reconfigured: Optional[Settings] = None

    def ask_stream(self, kb: str, question: str, history=None, doc=None, figure_id=None) -> Iterator[Any]:
        self.calls.append({"kb": kb, "question": question, "history": history, "doc": doc, "figure_id": figure_id})
        if self.error:
            raise self.error
        yield from self.stream

    def create_kb(self, name: str):
        raise KnowledgeBaseError(f"knowledge base '{name}' already exists")

    def list_kbs(self):
        return []

    def documents(self, kb: str):
        return []

    def reconfigure(self, settings: Settings) -> None:
        self.reconfigured = settings


def run_send(service: StubService, question: str = "what?", kb: Optional[str] = "kb", lock=None,
             turns=None) -> list[tuple]:
    handlers = ChatHandlers(service)  # type: ignore[arg-type]
    # Gradio sends each update before asking for the next: snapshot them the same way.
    return [copy.deepcopy(update) for update in handlers.send(question, kb, ALL_DOCUMENTS, [], turns or [], lock)]


def test_answer_streams_then_fills_the_panel() -> None:
    service = StubService()
    updates = run_send(service)
    assert len(updates) == 4  # question shown, two deltas, final
    streamed = updates[1][0][-1]["content"]
    assert CURRENCY_HTML in streamed and "$5" not in streamed
    final = updates[-1]
    messages, sources, confidence, turns, last_sources = final[0], final[2], final[3], final[7], final[8]
    assert messages[-2]["content"].endswith("$$E=mc^2$$.")
    assert "a.pdf" in messages[-1]["content"] and messages[-1]["metadata"]["title"]
    assert isinstance(sources, gr.Dataset)  # an update of the clickable sources table, with these rows:
    assert panels.source_rows([SOURCE]) == [["1", "a.pdf", "3", "87%"]]
    assert "72%" in confidence and "dl-warn" not in confidence
    assert turns == [{"role": "user", "content": "what?"},
                     {"role": "assistant", "content": "It costs $5 and $$E=mc^2$$."}]
    assert last_sources == [{"file": "a.pdf", "page": 3, "text": SOURCE.text}]
    assert service.calls[0]["doc"] is None


def test_low_confidence_warns() -> None:
    service = StubService(stream=[Answer("maybe", "extractive", 20.0, [SOURCE], notice="no model configured")])
    final = run_send(service)[-1]
    assert "dl-warn" in final[3]
    assert "no model configured" in final[0][-2]["content"]


def test_no_knowledge_base_is_a_chat_message() -> None:
    updates = run_send(StubService(), kb=None)
    assert "knowledge base" in updates[-1][0][-1]["content"]


@pytest.mark.parametrize("error, expected", [
    (LLMError("model endpoint refused the connection"), "refused the connection"),
    (KnowledgeBaseError("knowledge base 'kb' is empty"), "is empty"),
    (RuntimeError("boom"), "unexpected RuntimeError"),
])
def test_errors_become_readable_messages(error: BaseException, expected: str, caplog) -> None:
    with caplog.at_level(logging.ERROR):
        updates = run_send(StubService(error=error))
    text = updates[-1][0][-1]["content"]
    assert expected in text and "Traceback" not in text
    if isinstance(error, RuntimeError):
        assert "boom" in caplog.text  # unexpected errors are logged with their traceback


def test_figure_lock_is_used_once_and_released() -> None:
    service = StubService()
    final = run_send(service, lock={"id": "d1/p2_fig1", "page": 2, "file": "a.pdf"})[-1]
    assert service.calls[0]["figure_id"] == "d1/p2_fig1"
    assert final[5]["visible"] is False and final[6] is None


def test_history_is_passed_on() -> None:
    service = StubService()
    turns = [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"}]
    run_send(service, turns=turns)
    assert service.calls[0]["history"] == turns


def test_empty_question_changes_nothing() -> None:
    service = StubService()
    assert len(run_send(service, question="  ")) == 1 and not service.calls


def test_lock_and_unlock_figure() -> None:
    handlers = ChatHandlers(StubService())  # type: ignore[arg-type]
    event = SimpleNamespace(index=1)
    figures = [{"id": "x", "page": 1, "file": "a.pdf"}, {"id": "y", "page": 3, "file": "a.pdf"}]
    row, text, lock = handlers.lock_figure(figures, event)  # type: ignore[arg-type]
    assert row["visible"] is True and "figure p3" in text and lock["id"] == "y"
    row, lock = handlers.unlock_figure()
    assert row["visible"] is False and lock is None


def test_messages_from_the_browser_are_normalised() -> None:
    raw = [{"role": "user", "content": [{"type": "text", "text": "hi"}]},
           {"role": "assistant", "content": "yo", "metadata": {"title": "Sources"}}]
    assert normalize_messages(raw) == [{"role": "user", "content": "hi"},
                                       {"role": "assistant", "content": "yo", "metadata": {"title": "Sources"}}]


def test_kb_errors_are_status_lines() -> None:
    status, *_ = KBHandlers(StubService()).create("dup", None)  # type: ignore[arg-type]
    assert status.startswith("⚠️") and "already exists" in status


def test_uploaded_files_keep_original_names() -> None:
    paths, names = uploaded_files([{"path": "/tmp/gradio/ab12/x.pdf", "orig_name": "My paper (v2).pdf"},
                                   "/tmp/gradio/cd34/b.pdf"])
    assert paths == [Path("/tmp/gradio/ab12/x.pdf"), Path("/tmp/gradio/cd34/b.pdf")]
    assert names == ["My paper (v2).pdf", "b.pdf"]


def test_progress_text_and_results() -> None:
    event = ProgressEvent("ocr", file="a.pdf", file_index=1, file_count=2, current=3, total=10)
    assert progress_text(event) == "file 1 of 2 · a.pdf · OCR page 3 of 10"
    table = results_markdown([IngestResult("a.pdf", "indexed", pages=2, chunks=4),
                              IngestResult("b.pdf", "failed", error="encrypted PDF")])
    assert "indexed" in table and "encrypted PDF" in table


def test_settings_apply_keeps_secrets_and_never_shows_them() -> None:
    service = StubService()
    service.settings = service.settings.model_copy(update={
        "llm": service.settings.llm.model_copy(update={"api_key": SecretStr("sk-secret")})})
    handlers = SettingsHandlers(service)  # type: ignore[arg-type]
    result = handlers.apply("http://llm:8000/v1", "qwen", "", "", "sentence_transformers",
                            "bundled:multilingual-e5-small", "", "", "rapidocr")
    assert result[0].startswith("✅")
    assert service.reconfigured is not None
    assert service.reconfigured.llm.model == "qwen"
    assert service.reconfigured.llm.api_key.get_secret_value() == "sk-secret"
    assert "sk-secret" not in repr(result) and key_status(service.reconfigured.llm.api_key).startswith("set")


def test_settings_invalid_value_is_a_status_line() -> None:
    handlers = SettingsHandlers(StubService())  # type: ignore[arg-type]
    result = handlers.apply("", "", "", "", "sentence_transformers", "m", "", "", "no-such-engine")
    assert result[0].startswith("⚠️") and "engine" in result[0]


def test_parse_auth() -> None:
    assert parse_auth("alice:s3cret:x") == ("alice", "s3cret:x")
    assert parse_auth(None) is None
    with pytest.raises(SettingsError):
        parse_auth("alice")


def test_build_app_has_every_element_id() -> None:
    from ui.app import build_app
    service = StubService()
    demo = build_app(service)  # type: ignore[arg-type]
    ids = {block.elem_id for block in demo.blocks.values() if getattr(block, "elem_id", None)}
    expected = {"kb-select", "doc-filter", "chatbot", "question", "send", "clear", "sources", "confidence",
                "summary", "figure-gallery", "figure-lock", "figure-unlock", "kb-new-name", "kb-create",
                "kb-rename", "kb-delete", "kb-delete-confirm", "upload-files", "upload-start", "upload-cancel",
                "ingest-status", "docs-table", "page-preview"}
    assert expected <= ids
    api_names = {fn.api_name for fn in demo.fns.values()}
    assert {"create_kb", "upload", "ask", "delete_kb"} <= api_names
    assert all(fn.api_name for fn in demo.fns.values()), "every event needs an explicit api_name"
    assert isinstance(demo, gr.Blocks)
