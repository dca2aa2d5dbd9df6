"""UI handlers over a real DocLens: readable errors, figure lock, history, settings, uploads.

One service (real Milvus Lite file, the bundled embedder) and one small knowledge base built from one
sample PDF serve the whole module; the model is the recording FakeOpenAI. Milvus Lite allows one client
per store per process, so tests switch the one service between configurations with ``reconfigure``.
"""

from __future__ import annotations

import copy
import inspect
import logging
import re
import shutil
import socket
import time
from pathlib import Path
from typing import Any, Iterator, Optional

import gradio as gr
import pytest

from backend.errors import SettingsError
from backend.service import DocLens
from backend.types import Answer, Figure, IngestResult, ProgressEvent, Source
from tests.conftest import SAMPLES, make_settings
from tests.support.fake_openai import FakeOpenAI, RecordedRequest
from ui.app import build_app, parse_auth
from ui.chat_tab import ChatHandlers, answer_markdown, normalize_messages
from ui.common import ALL_DOCUMENTS, error_text, kb_names, shows_errors
from ui.icons import SYMBOLS, icon
from ui.kb_tab import KBHandlers, progress_text, results_markdown, uploaded_files, user_key
from ui.latex import CURRENCY_HTML
from ui.settings_tab import SettingsHandlers, key_status
from ui.upload_jobs import UploadJobs
from ui.web_files import ReceivedUploads

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


# ---------------------------------------------------------------- fixtures


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


# ---------------------------------------------------------------- helpers


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


# ---------------------------------------------------------------- asking


def test_answer_streams_then_fills_the_panel(service: DocLens, fake: FakeOpenAI) -> None:
    fake.queue_reply(REPLY)
    updates = run_send(service)
    assert len(updates) >= 4  # question shown, several deltas (12 characters each), final
    assert updates[0][0][-1] == {"role": "assistant", "content": ""}
    streamed = [update[0][-1]["content"] for update in updates[1:-1]]
    assert streamed[0] and all(a != b for a, b in zip(streamed, streamed[1:]))  # it grows as it arrives
    assert CURRENCY_HTML in streamed[-1] and "$5" not in streamed[-1]
    final = updates[-1]
    messages, sources, confidence, chart, turns, last_sources = (
        final[0],
        final[2],
        final[3],
        final[4],
        final[7],
        final[8],
    )
    assert messages[-2]["content"].startswith(
        "The levels are $$E_n=\\hbar\\omega(n+\\tfrac12)$$ "
        '<span class="dl-cite dl-answer-0" role="link" tabindex="0">[1]</span>.'
    )
    assert PHYSICS in messages[-1]["content"] and messages[-1]["metadata"]["title"]
    assert isinstance(sources, gr.Dataset)  # an update of the clickable sources table, with these rows:
    rows = sources.raw_samples
    assert rows and rows[0][:2] == ["1", PHYSICS] and rows[0][2] in ("1", "2") and rows[0][3].endswith("%")
    assert "dl-warn" not in confidence and 'data-mode="llm"' in confidence
    assert "dl-chart" in chart and PHYSICS in chart
    assert [t["role"] for t in turns] == ["user", "assistant"] and turns[0]["content"] == QUESTION
    assert turns[1]["content"].startswith("The levels are")  # the raw answer, not the rendered bubble
    assert len(last_sources) == 1, "one list of sources per answer"
    assert last_sources[0] and last_sources[0][0]["file"] == PHYSICS and last_sources[0][0]["text"]
    answer_requests = [r for r in fake.chat_requests() if r.body.get("stream")]
    assert len(answer_requests) == 1 and QUESTION in answer_requests[0].text()


def test_low_confidence_warns(service: DocLens, data_dir: Path, fake: FakeOpenAI) -> None:
    service.reconfigure(make_settings(data_dir))  # no model: an extractive answer with a notice
    final = run_send(service, question=OFF_TOPIC)[-1]
    assert "dl-warn" in final[3] and 'data-mode="extractive"' in final[3]
    text = answer_text([final])
    assert "No language model is configured" in text
    assert text.count("No language model is configured") == 1, "the notice is shown once"
    assert not fake.requests


def test_warn_threshold_comes_from_the_live_settings(service: DocLens) -> None:
    warn_all = service.settings.model_copy(
        update={"confidence": service.settings.confidence.model_copy(update={"warn_below": 100.0})}, deep=True
    )
    service.reconfigure(warn_all)
    assert "dl-warn" in run_send(service)[-1][3]


def test_no_knowledge_base_is_a_chat_message(service: DocLens, fake: FakeOpenAI) -> None:
    updates = run_send(service, kb=None)
    assert len(updates) == 1 and "knowledge base" in last_message(updates)
    assert not fake.requests


@pytest.mark.parametrize("down", ["500", "closed port"])
def test_model_down_gives_passages_with_a_notice(down: str, service: DocLens, data_dir: Path, fake: FakeOpenAI) -> None:
    if down == "500":
        fake.fail_next(500, times=3)
    else:
        service.reconfigure(make_settings(data_dir, **model_env(f"http://127.0.0.1:{closed_port()}/v1")))
    final = run_send(service)[-1]
    text = answer_text([final])
    assert "The language model failed" in text and "Traceback" not in text
    assert 'data-mode="extractive"' in final[3] and final[8], "the passages are still the sources"
    if down == "500":
        assert fake.chat_requests(), "the fake model was asked"


@pytest.mark.parametrize(
    "kb, expected",
    [
        (EMPTY_KB, "has no documents yet"),
        ("no such kb", "does not exist"),
    ],
)
def test_errors_become_readable_messages(kb: str, expected: str, service: DocLens) -> None:
    updates = run_send(service, kb=kb)
    text = last_message(updates)
    assert text.startswith(WARN) and expected in text and "Traceback" not in text
    final = updates[-1]
    assert final[5]["visible"] is False and final[6] is None  # a figure lock is dropped too


def test_unknown_document_filter_is_a_readable_message(service: DocLens) -> None:
    text = last_message(run_send(service, doc_filter="missing.pdf"))
    assert text.startswith(WARN) and "missing.pdf" in text and "is not in knowledge base" in text


def test_unexpected_errors_are_logged_and_not_shown(caplog) -> None:
    try:
        {}["boom"]
    except KeyError as exc:
        with caplog.at_level(logging.ERROR, logger="ui.common"):
            text = error_text(exc, "answer the question")
    assert text == "could not answer the question: unexpected KeyError (details are in the server log)"
    assert "boom" in caplog.text and "Traceback" in caplog.text


def test_handlers_turn_failures_into_one_line_through_one_decorator(service: DocLens, caplog) -> None:
    @shows_errors("run the demo", outputs=lambda line, value, **_: (line, value))
    def demo(value: int, request: gr.Request = None) -> tuple:
        raise KeyError("boom")

    @shows_errors("run the demo")
    def plain(lang: str = "en") -> str:
        raise SettingsError("llm.timeout must be a number")

    with caplog.at_level(logging.ERROR, logger="doclens.ui"):
        assert demo(7) == ("could not run the demo: unexpected KeyError (details are in the server log)", 7)
    assert "Traceback" in caplog.text
    assert plain() == f"{WARN} llm.timeout must be a number"
    assert plain(lang="zh").startswith(WARN) and plain("zh") == plain(lang="zh")
    assert "progress" in inspect.signature(KBHandlers(service).selftest).parameters  # what Gradio reads
    renamed = KBHandlers(service).rename("no such kb", "other")
    assert renamed[0].startswith(WARN) and "does not exist" in renamed[0] and len(renamed) == 4


def test_figure_lock_is_used_once_and_released(service: DocLens, fake: FakeOpenAI, figure: Figure) -> None:
    lock = {"id": figure.id, "page": figure.page, "file": figure.file}
    final = run_send(service, question="这张图展示了什么？", lock=lock)[-1]
    vision = fake.vision_requests()
    assert len(vision) == 1 and vision[0].body["model"] == "fake-vision"
    assert final[5]["visible"] is False and final[6] is None
    assert 'data-mode="vision"' in final[3]
    # the meter is labelled as the text passages' confidence, with no low-confidence warning
    assert "Text sources" in final[3] and "dl-note" in final[3] and "dl-warn" not in final[3]
    run_send(service, question="再解释一下公式", lock=final[6])  # the next question goes without the figure
    assert len(fake.vision_requests()) == 1


def test_history_is_passed_on(service: DocLens, fake: FakeOpenAI) -> None:
    turns = [
        {"role": "user", "content": "What is a harmonic oscillator?"},
        {"role": "assistant", "content": "A mass on a spring."},
    ]
    final = run_send(service, question="and its energy levels?", turns=turns)[-1]
    condense = [r for r in fake.chat_requests() if is_condense(r)]
    assert len(condense) == 1
    assert "A mass on a spring." in condense[0].text() and "and its energy levels?" in condense[0].text()
    assert final[7][:2] == turns and final[7][2] == {"role": "user", "content": "and its energy levels?"}


def test_empty_question_changes_nothing(service: DocLens, fake: FakeOpenAI) -> None:
    updates = run_send(service, question="  ")
    assert updates == [(gr.skip(),) * 10]
    assert not fake.requests


def test_lock_and_unlock_figure(service: DocLens, figure: Figure) -> None:
    handlers = ChatHandlers(service)
    gallery, figures = handlers.figure_gallery(KB, ALL_DOCUMENTS)
    assert [f["id"] for f in figures] == [figure.id]
    assert Path(gallery["value"][0][0]).read_bytes() == Path(figure.path).read_bytes()  # a served copy
    row, thumb, text, lock = handlers.lock_figure(figures, gr.SelectData(None, {"index": 0, "value": None}))
    assert row["visible"] is True and lock["id"] == figure.id
    assert thumb == gallery["value"][0][0], "the chip shows the figure's served copy"
    assert figure.file in text and f"figure p{figure.page}" in text  # the chip says which figure
    assert handlers.lock_figure(figures, gr.SelectData(None, {"index": 5, "value": None})) == (gr.skip(),) * 4
    row, lock = handlers.unlock_figure()
    assert row["visible"] is False and lock is None


def test_messages_from_the_browser_are_normalised() -> None:
    raw = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": "yo", "metadata": {"title": "Sources"}},
    ]
    assert normalize_messages(raw) == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "yo", "metadata": {"title": "Sources"}},
    ]


# ---------------------------------------------------------------- knowledge bases


@pytest.mark.parametrize("name, expected", [(KB, "already exists"), ("x" * 60, "at most 42")])
def test_kb_errors_are_status_lines(name: str, expected: str, service: DocLens) -> None:
    status, picker, table, name_box = KBHandlers(service).create(name, KB)
    assert status.startswith(WARN) and expected in status
    assert picker["value"] == KB and KB in picker["choices"]  # the page stays on the current KB
    assert name_box == gr.skip()
    assert [row[0] for row in table["value"]] == [PHYSICS]


def test_uploads_keep_original_names(service: DocLens, tmp_path: Path) -> None:
    """A real upload as Gradio hands it over: a temp file path, and the user's file name beside it."""
    temp = tmp_path / "gradio" / "5f1c0a" / "upload.pdf"
    temp.parent.mkdir(parents=True)
    shutil.copyfile(SAMPLES / PHYSICS, temp)
    original = "My paper (v2).pdf"
    blocks = gr.Blocks()
    blocks.upload_file_set.add(str(temp))  # as Gradio's /upload route records what it received
    handlers = KBHandlers(service, ReceivedUploads(blocks, tmp_path / "gradio"))
    status, *_ = handlers.create("uploads", KB)
    assert status.startswith(icon("ok"))
    status, table, timer, files, browser = handlers.upload("uploads", [{"path": str(temp), "orig_name": original}])
    assert 'class="dl-progress"' in status and timer["active"] is True and files is None
    assert browser, "a browser's first upload gives it an id"
    job = handlers.jobs.get(f"browser:{browser}", "uploads")
    assert job is not None and job.done.wait(120)
    results, table, picker, timer = handlers.poll("uploads", browser)
    assert original in results and "indexed" in results and timer["active"] is False
    assert [row[0] for row in table["value"]] == [original]
    assert picker["choices"] == [original] and picker["value"] is None, "nothing is pre-selected for deletion"
    assert [f.file for f in service.figures("uploads")] == [original]


def test_upload_without_files_or_kb_is_a_status_line(service: DocLens) -> None:
    handlers = KBHandlers(service)
    status, *rest = handlers.upload(KB, [])
    assert status.startswith(WARN) and "PDF" in status
    status, *rest = handlers.upload(None, [str(SAMPLES / PHYSICS)])
    assert status.startswith(WARN) and "knowledge base" in status
    assert rest[2] == gr.skip(), "the chosen files are never dropped"


def test_uploaded_files_read_gradio_file_data() -> None:
    paths, names = uploaded_files(
        [{"path": "/tmp/gradio/ab12/x.pdf", "orig_name": "My paper (v2).pdf"}, "/tmp/gradio/cd34/b.pdf"]
    )
    assert paths == [Path("/tmp/gradio/ab12/x.pdf"), Path("/tmp/gradio/cd34/b.pdf")]
    assert names == ["My paper (v2).pdf", "b.pdf"]


def test_progress_text_and_results() -> None:
    event = ProgressEvent("ocr", file="a.pdf", file_index=1, file_count=2, current=3, total=10)
    assert progress_text(event) == "file 1 of 2 · a.pdf · OCR page 3 of 10"
    assert progress_text(ProgressEvent("done", file_index=2, file_count=2, message="done")) == "file 2 of 2 · done"
    table = results_markdown(
        [IngestResult("a|b.pdf", "indexed", pages=2, chunks=4), IngestResult("b.pdf", "failed", error="encrypted PDF")]
    )
    assert "a\\|b.pdf" in table and f"{icon('ok')} indexed" in table and f"{icon('fail')} failed" in table
    assert "encrypted PDF" in table
    assert results_markdown([]).startswith(WARN)


# ---------------------------------------------------------------- settings and app


def test_settings_apply_keeps_secrets_and_never_shows_them(service: DocLens, fake: FakeOpenAI) -> None:
    handlers = SettingsHandlers(service)
    embedder = service.embedder
    before = handlers.current_values()
    assert API_KEY not in repr(before) and before[3] == key_status(service.settings.llm.api_key)
    result = handlers.apply(
        fake.base_url, "qwen", "", "", "sentence_transformers", "bundled:multilingual-e5-small", "", "", "rapidocr"
    )
    assert result[0].startswith(icon("ok"))
    assert service.settings.llm.model == "qwen"
    assert service.settings.llm.api_key.get_secret_value() == API_KEY
    assert API_KEY not in repr(result) and result[4].startswith("set") and result[-2:] == ("", "")
    assert service.embedder is embedder, "an unchanged embedding keeps the loaded model"
    fake.queue_reply("Short answer [1].")
    run_send(service)
    answer_request = fake.last_chat()
    assert answer_request.body["model"] == "qwen"
    assert answer_request.header("Authorization") == f"Bearer {API_KEY}"


def test_settings_invalid_value_is_a_status_line(service: DocLens) -> None:
    before = service.settings
    result = SettingsHandlers(service).apply("", "", "", "", "sentence_transformers", "m", "", "", "no-such-engine")
    assert result[0].startswith(WARN) and "engine" in result[0]
    assert service.settings is before, "nothing was applied"


def test_parse_auth() -> None:
    assert parse_auth("alice:s3cret:x") == ("alice", "s3cret:x")
    assert parse_auth(None) is None
    with pytest.raises(SettingsError):
        parse_auth("alice")


def test_build_app_has_every_element_id(service: DocLens) -> None:
    demo = build_app(service)
    ids = {block.elem_id for block in demo.blocks.values() if getattr(block, "elem_id", None)}
    expected = {
        "kb-select",
        "doc-filter",
        "chatbot",
        "question",
        "send",
        "clear",
        "sources",
        "confidence",
        "summary",
        "figure-gallery",
        "figure-lock",
        "figure-unlock",
        "kb-new-name",
        "kb-create",
        "kb-rename",
        "kb-delete",
        "kb-delete-confirmation-yes",
        "doc-delete-confirmation-yes",
        "upload-files",
        "upload-start",
        "upload-cancel",
        "ingest-status",
        "docs-table",
        "page-preview",
    }
    assert expected <= ids
    api_names = {fn.api_name for fn in demo.fns.values()}
    assert {"create_kb", "upload", "ask", "delete_kb"} <= api_names
    assert all(fn.api_name for fn in demo.fns.values()), "every event needs an explicit api_name"
    kb_active = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "kb-active")
    assert KB in [choice[0] for choice in kb_active.choices]  # built from the real service's list


# ---------------------------------------------------------------- issue 12


def test_kb_delete_uses_the_name_the_confirmation_showed(service: DocLens) -> None:
    """Item 1: the service call gets the confirmation's name, never the picker's current value."""
    handlers = KBHandlers(service)
    handlers.create("to-delete", KB)
    row, message, pending = handlers.ask_delete("to-delete")
    assert row["visible"] is True and "to-delete" in message and pending == "to-delete"
    status, row, picker, _table, pending = handlers.delete(pending)
    assert "to-delete" in status and row["visible"] is False and pending is None
    assert "to-delete" not in picker["choices"] and KB in picker["choices"]
    assert handlers.close_confirmation()[1] is None  # a new selection drops the pending name


HOSTILE_NAME = "**x** <img src=x onerror=alert(1)> [link](http://example.com) $5"


def rendered(markdown: str) -> str:
    """The Markdown as HTML (CommonMark with raw HTML allowed, as a page would show it)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).render(markdown)


def test_names_in_confirmations_and_statuses_are_shown_as_typed(service: DocLens) -> None:
    """A knowledge base or file name is text: no emphasis, no HTML element, no link, no math."""
    handlers = KBHandlers(service)
    _row, kb_message, pending = handlers.ask_delete(HOSTILE_NAME)
    _row, doc_message, pending_doc = handlers.ask_delete_document(KB, HOSTILE_NAME)
    assert pending == HOSTILE_NAME and pending_doc == {"kb": KB, "file": HOSTILE_NAME}
    for message in (kb_message, doc_message):
        html_out = rendered(message)
        assert "<img" not in html_out and "<a " not in html_out and "<strong>x</strong>" not in html_out, html_out
        assert "**x**" in html_out and "&lt;img src=x onerror=alert(1)&gt;" in html_out
        assert "$5" not in message, "a name is not math either"


def test_file_delete_is_confirmed_with_its_name(service: DocLens) -> None:
    """Item 2: no document is pre-selected, and deleting one first asks, naming file and KB."""
    handlers = KBHandlers(service)
    assert handlers.file_choices(KB)["value"] is None
    row, message, pending = handlers.ask_delete_document(KB, None)
    assert row["visible"] is False and pending is None
    row, message, pending = handlers.ask_delete_document(KB, PHYSICS)
    assert row["visible"] is True and PHYSICS in message and KB in message
    assert pending == {"kb": KB, "file": PHYSICS}
    assert [d.file for d in service.documents(KB)] == [PHYSICS], "asking deletes nothing"


def test_user_text_and_quoted_passages_are_not_math(service: DocLens, data_dir: Path) -> None:
    """Item 3: the user's "$5 and $10" and a quoted "(M$)" keep their dollar signs out of KaTeX."""
    user = run_send(service, question="$5 and $10 是多少钱？")[0][0][-2]
    assert user["role"] == "user" and "$" not in user["content"] and user["content"].count(CURRENCY_HTML) == 2
    source = Source(
        "report.pdf", "d1", 3, 3, 0, "| Region | Revenue (M$) | Cost (M$) |\n| EU | 12 | 9 |", relevance=80.0
    )
    answer = Answer(
        "",
        "extractive",
        80.0,
        [source],
        notice="No language model is configured, so this answer quotes the most relevant passages.",
        question="revenue by region",
    )
    rendered = answer_markdown(answer, "en")
    assert "$" not in rendered and rendered.count(CURRENCY_HTML) == 2 and "report.pdf" in rendered


def test_a_citation_opens_the_source_of_its_own_answer(service: DocLens) -> None:
    """[n] in an older answer opens that answer's source n, not the newest answer's."""
    handlers = ChatHandlers(service)
    first = list(handlers.send(QUESTION, KB, ALL_DOCUMENTS, [], [], None, []))[-1]
    messages, turns, answer_sources = first[0], first[7], first[8]
    second = list(
        handlers.send("What does the figure on page 2 show?", KB, ALL_DOCUMENTS, messages, turns, None, answer_sources)
    )[-1]
    answer_sources = second[8]
    assert len(answer_sources) == 2
    bubbles = [m["content"] for m in second[0] if m["role"] == "assistant" and not m.get("metadata")]
    assert "dl-answer-0" in bubbles[0] and "dl-answer-1" in bubbles[1] and "dl-answer-1" not in bubbles[0]
    old = answer_sources[0][0]
    preview = handlers.show_cited("0:1", KB, answer_sources)
    assert preview["label"] == f"[1] {old['file']} · p{old['page']}"
    newest = answer_sources[1][0]
    assert handlers.show_page(0, KB, answer_sources)["label"] == f"[1] {newest['file']} · p{newest['page']}"
    assert handlers.show_cited("2:1", KB, answer_sources) == gr.skip()  # no such answer
    assert handlers.show_cited("nonsense", KB, answer_sources) == gr.skip()


def test_a_new_answer_hides_the_previous_page(service: DocLens) -> None:
    """Item 5: the page preview is cleared as soon as a new question is asked."""
    updates = run_send(service)
    assert updates[0][9] == gr.update(value=None, visible=False)


def test_extractive_answers_show_each_passage_once(service: DocLens, data_dir: Path) -> None:
    """Item 20: without a model, the answer quotes the passages; no second "Sources" block repeats them."""
    service.reconfigure(make_settings(data_dir))
    final = run_send(service)[-1]
    messages = final[0]
    assert not any(m.get("metadata") for m in messages), "no Sources message under a quoted answer"
    assert final[2].raw_samples, "the clickable table still lists the sources"
    text = answer_text([final])
    assert text.count("[1]") == 1 and "relevance" in text


def test_cancel_status_ends_in_the_final_state(service: DocLens, tmp_path: Path) -> None:
    """Item 8: Cancel while nothing runs says so; a cancelled job ends in "nothing was stored"."""
    handlers = KBHandlers(service, jobs=UploadJobs(slow_ingest(service)))
    assert handlers.cancel_upload(KB) == "No upload is running."
    job = handlers.jobs.start("", KB, [SAMPLES / PHYSICS], ["again.pdf"])
    assert job is not None and handlers.attach(KB)[1]["active"] is True, "a reloaded page re-attaches"
    assert "Cancelling after the current page" in handlers.cancel_upload(KB)
    assert job.done.wait(60)
    status, _table, _picker, timer = handlers.poll(KB)
    assert "Upload cancelled; nothing was stored." in status and timer["active"] is False
    assert handlers.cancel_upload(KB) == "No upload is running."
    assert [d.file for d in service.documents(KB)] == [PHYSICS]


def test_an_upload_belongs_to_the_browser_that_started_it(service: DocLens) -> None:
    """Without a login, another browser sees that an upload runs in the KB but cannot cancel it; the
    browser that started it (same id after a reload) follows and cancels it."""
    handlers = KBHandlers(service, jobs=UploadJobs(slow_ingest(service)))
    owner, other = "browser-one", "browser-two"
    job = handlers.jobs.start(user_key(None, owner), KB, [SAMPLES / PHYSICS], ["again.pdf"])
    assert job is not None
    status, timer = handlers.attach(KB, other)
    assert "another browser" in status and timer["active"] is False
    assert "only that browser can cancel it" in handlers.cancel_upload(KB, other)
    assert not job.cancel.is_set(), "another browser cannot cancel it"
    assert handlers.poll(KB, other)[3]["active"] is False
    assert handlers.attach(KB, owner)[1]["active"] is True
    assert "Cancelling after the current page" in handlers.cancel_upload(KB, owner)
    assert job.cancel.is_set() and job.done.wait(60)


def slow_ingest(service: DocLens):
    """The real ingest, started only once the test has cancelled (so the cancel lands on a running job)."""

    def ingest(kb, paths, *, cancel, **options):
        cancel.wait(30)
        return service.ingest(kb, paths, cancel=cancel, **options)

    return ingest


def test_model_preparation_shows_a_banner_with_the_builds_step_and_fraction(service: DocLens) -> None:
    """Item 9: while the embedding model is prepared the page says so, which step the build is in, how
    far along (reported by the build, backend/embedding/builds.py) and for how long."""
    from backend.embedding.builds import report_step
    from ui.app import model_banner

    banner, timer = model_banner(service)
    assert banner["visible"] is False and timer["active"] is False
    service.model_state.started(service.settings)
    try:
        banner, timer = model_banner(service)
        assert banner["visible"] is True and timer["active"] is True
        assert "Preparing the embedding model: loading the model" in banner["value"]
        assert "dl-indeterminate" in banner["value"]  # no build reported: no made-up percentage
        assert service.model_state.plan == ("bundled", "int8") or service.model_state.plan == ("bundled",)
        report_step("bundled", "package", 0.5)
        banner, _ = model_banner(service)
        assert "packaging it for sentence-transformers" in banner["value"]
        assert re.search(r'aria-valuenow="([1-9]\d?)"', banner["value"]), banner["value"]
    finally:
        service.model_state.finished()
    report_step("int8", "quantize", 0.5)  # nobody listens once the model is ready
    assert service.model_state.step == "bundled:package"


def test_a_kb_is_created_without_waiting_for_the_embedding_model(tmp_path: Path) -> None:
    """Item 9: on a first start the model is built for minutes; creating a knowledge base must not wait
    (a bundled model's id and dimensions are known before it is built)."""
    empty_cache = tmp_path / "no-models-yet"
    with DocLens(make_settings(tmp_path / "data", DOCLENS_EMBEDDING_CACHE_DIR=str(empty_cache))) as fresh:
        started = time.monotonic()
        kb = fresh.create_kb("early")
        assert time.monotonic() - started < 10 and (kb.embedding_model, kb.dim) == (
            "bundled:multilingual-e5-small",
            384,
        )
        assert not empty_cache.exists() or not any(empty_cache.iterdir()), "nothing was built"
    with DocLens(make_settings(tmp_path / "data")) as ready:  # the built model agrees with what was recorded
        assert (ready.embedder.model_id, ready.embedder.dim) == (kb.embedding_model, kb.dim)
        ready.open_kb("early")


def test_fresh_install_gets_an_empty_default_kb(tmp_path: Path, fake: FakeOpenAI) -> None:
    """Item 10: the first start creates "Default" (once: deleting it later does not bring it back)."""
    from ui.app import start_first_run

    with DocLens(make_settings(tmp_path / "fresh", **model_env(fake.base_url))) as fresh:
        thread = start_first_run(fresh)
        assert thread is not None
        thread.join(120)
        assert [kb.name for kb in fresh.list_kbs()] == ["Default"]
        fresh.delete_kb("Default")
        assert start_first_run(fresh) is None and fresh.list_kbs() == []


def test_temporary_evaluation_kbs_are_hidden(service: DocLens) -> None:
    """Item 14: "eval 20261201-101010" (made and deleted by an evaluation) never shows in a KB list."""
    service.create_kb("eval 20261201-101010")
    try:
        assert "eval 20261201-101010" not in kb_names(service)
        assert "eval 20261201-101010" in [kb.name for kb in service.list_kbs()]
    finally:
        service.delete_kb("eval 20261201-101010")


def test_selftest_shows_progress(service: DocLens) -> None:
    """Item 15: the recall self-test reports each question as it goes."""
    progress = RecordingProgress()
    report = KBHandlers(service).selftest(KB, 3, progress=progress)
    assert "chunk_top1" in report
    assert [desc for _, desc in progress.calls][-1].startswith("self-test question")
    assert progress.calls[-1][0] == pytest.approx(1.0)


def test_icons_need_no_emoji_font() -> None:
    """Item 16: every status icon is a plain symbol an installed non-emoji font covers (DejaVu on Debian)."""
    import subprocess

    for name, symbol in SYMBOLS.items():
        assert not 0x1F000 <= ord(symbol) <= 0x1FAFF, name
        fonts = subprocess.run(
            ["fc-list", f":charset={ord(symbol):x}", "family"], capture_output=True, text=True
        ).stdout
        assert fonts.strip() and "emoji" not in fonts.lower(), (name, symbol)
    emoji = re.compile("[\U0001f000-\U0001faff\u2705\u274c\u2b50\ufe0f]")
    for path in (Path(__file__).resolve().parents[2] / "ui").glob("*.py"):
        assert not emoji.search(path.read_text(encoding="utf-8")), f"{path.name} still shows emoji"


def test_an_unrelated_rewrite_does_not_take_over_retrieval(service: DocLens, fake: FakeOpenAI) -> None:
    """Item 21: from the second question on, the rewrite is searched beside the user's own words. The
    recording model "condenses" a physics question into one about the other document of the KB."""
    if "two docs" not in kb_names(service):
        service.create_kb("two docs")
        results = service.ingest("two docs", [SAMPLES / PHYSICS, SAMPLES / "计算机科学示例文档.pdf"])
        assert [r.status for r in results] == ["indexed", "indexed"], results
    rewrite = "计算机科学示例文档 讲了哪些算法和数据结构？"
    assert service.search("two docs", rewrite).sources[0].file != PHYSICS, "the rewrite finds the other file"
    right = service.search("two docs", QUESTION).sources[0]
    assert right.file == PHYSICS
    fake.queue_reply(rewrite)  # the condense request is the first chat call
    turns = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi."}]
    handlers = ChatHandlers(service)
    final = list(handlers.send(QUESTION, "two docs", ALL_DOCUMENTS, [], turns, None))[-1]
    assert [r for r in fake.chat_requests() if is_condense(r)], "the question was condensed by the model"
    assert final[8][-1][0]["file"] == PHYSICS and final[8][-1][0]["text"] == right.text, "the right source comes first"
