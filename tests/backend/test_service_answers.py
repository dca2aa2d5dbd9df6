"""Answers end to end through the DocLens facade: real Milvus Lite, the bundled embedder, FakeOpenAI.

One knowledge base is built once for the module from two small sample PDFs. Milvus Lite allows one client
per store per process: the tests switch the one service between "FakeOpenAI" and "no model" (``reconfigure``)."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Callable, Iterator, Optional

import pytest

from backend.service import DocLens
from backend.types import Answer, Figure
from tests.conftest import SAMPLES, make_settings
from tests.support.fake_openai import FakeOpenAI, RecordedRequest, images_in

KB = "answers"
PHYSICS = "物理公式示例文档.pdf"  # 2 pages: harmonic oscillator formulas, a figure on page 2
COMPUTING = "计算机科学示例文档.pdf"  # 2 pages, a figure on page 1
API_KEY = "sk-test-secret"
QUESTION = "简谐振子的能级公式是什么？"
FIGURE_QUESTION = "这张图展示了什么？"
CHAT_PATH = "/chat/completions"
KEY_LEAK_BODY = {"error": {"message": f"Incorrect API key provided: {API_KEY}", "type": "invalid_request_error"}}
IMAGE_REFUSED_BODY = {"error": {"message": "image input not supported by this model", "type": "invalid_request_error"}}

Reconfigure = Callable[..., None]


def model_env(base_url: str) -> dict[str, str]:
    return {
        "DOCLENS_LLM_BASE_URL": base_url,
        "DOCLENS_LLM_MODEL": "some-model",
        "DOCLENS_LLM_VISION_MODEL": "some-vision-model",
        "DOCLENS_LLM_API_KEY": API_KEY,
        "DOCLENS_LLM_QPS": "50",  # the shared limiter would space requests 0.5 s apart at the default 2
        "DOCLENS_LLM_MAX_RETRIES": "2",  # keeps the 5xx backoff around a second
        # Each request counts here: only the expansion tests turn it on, test_service_formulas.py the other.
        "DOCLENS_RETRIEVAL_QUERY_EXPANSION": "false",
        "DOCLENS_INGEST_READ_FORMULAS": "false",
    }


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("answers") / "data"


@pytest.fixture(scope="module")
def service(data_dir: Path) -> Iterator[DocLens]:
    with DocLens(make_settings(data_dir)) as svc:
        svc.create_kb(KB)
        results = svc.ingest(KB, [SAMPLES / PHYSICS, SAMPLES / COMPUTING])
        assert [r.status for r in results] == ["indexed", "indexed"], results
        yield svc


@pytest.fixture
def reconfigure(service: DocLens, data_dir: Path, fake: FakeOpenAI) -> Reconfigure:
    """Switch the running service: to the fake model (default), another base URL, or no model."""

    def apply(*, model: bool = True, base_url: Optional[str] = None, **env: str) -> None:
        full = model_env(base_url or fake.base_url) if model else {}
        full.update(env)
        service.reconfigure(make_settings(data_dir, **full))

    return apply


@pytest.fixture(autouse=True)
def fake_model(reconfigure: Reconfigure, fake: FakeOpenAI) -> Iterator[None]:
    fake.reset()
    reconfigure()
    yield
    fake.reset()  # faults a failed test left queued must not leak into the next one


# ---------------------------------------------------------------- helpers


def answer_requests(fake: FakeOpenAI) -> list[RecordedRequest]:
    """The streamed answer requests (condensing, translation and summaries are not streamed)."""
    return [r for r in fake.chat_requests() if r.body.get("stream")]


def request_kind(request: RecordedRequest) -> str:
    system = request.messages[0].get("content", "") if request.messages else ""
    if request.body.get("stream"):
        return "answer"
    if isinstance(system, str) and system.startswith("Translate the user's question"):
        return "translate"
    if "Follow-up question:" in request.text():
        return "condense"
    return "other"


def translation_requests(fake: FakeOpenAI) -> list[RecordedRequest]:
    return [r for r in fake.chat_requests() if request_kind(r) == "translate"]


_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+?\$", re.S)
_SOURCE_LINE = re.compile(r"^\[(\d+)\] (.+?), pp?\. (\d+)", re.M)


def cited_numbers(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\[(\d+)\]", _MATH.sub("", text))]


def prompt_sources(request: RecordedRequest) -> list[tuple[int, str, int]]:
    """(number, file, page) of each source listed in the answer request's last user message."""
    content = request.messages[-1]["content"]
    return [(int(n), file, int(page)) for n, file, page in _SOURCE_LINE.findall(content)]


def assert_sources_numbered_in_prompt(request: RecordedRequest, answer: Answer) -> None:
    assert answer.sources, "the question should find passages in the sample PDFs"
    expected = [(n, s.file, s.page) for n, s in enumerate(answer.sources, start=1)]
    assert prompt_sources(request) == expected


def assert_citations_valid(answer: Answer) -> None:
    cited = cited_numbers(answer.answer)
    assert cited, answer.answer
    assert all(1 <= n <= len(answer.sources) for n in cited), (cited, len(answer.sources))


def physics_figure(service: DocLens) -> Figure:
    figures = service.figures(KB, PHYSICS)
    assert figures, "the physics sample has a figure on page 2"
    return figures[0]


def stopped_server_url() -> str:
    """The base URL of a FakeOpenAI that has been stopped: nothing listens on that port any more."""
    server = FakeOpenAI().start()
    url = server.base_url
    server.stop()
    return url


# ---------------------------------------------------------------- answers from the model


def test_stream_yields_sources_then_deltas_then_an_llm_answer(service: DocLens, fake: FakeOpenAI):
    updates = service.ask_stream(KB, QUESTION)
    found = next(updates)  # found before the model is asked
    assert found.sources and not (found.delta or found.done or answer_requests(fake))
    *steps, last = list(updates)
    assert [s.chunk_id for s in found.sources] == [s.chunk_id for s in last.answer.sources]
    final, deltas = last.answer, [step.delta for step in steps]
    assert last.done and isinstance(final, Answer) and final.mode == "llm" and not final.notice
    assert len(deltas) >= 2 and all(deltas) and not any(step.done for step in steps)
    assert steps[-1].text == "".join(deltas) and "".join(deltas).strip() == final.answer  # the text so far
    assert "$$E=mc^2$$" in final.answer and "$x^2$" in final.answer
    [request] = answer_requests(fake)
    assert request.body["model"] == "some-model" and request.header("Authorization") == f"Bearer {API_KEY}"
    assert_sources_numbered_in_prompt(request, final)
    assert_citations_valid(final)


def test_deltas_reach_the_caller_while_the_model_is_still_writing(service: DocLens, fake: FakeOpenAI):
    fake.stream_delay = 0.05  # ~10 chunks: the whole reply takes about half a second
    try:
        arrivals = [(time.monotonic(), update) for update in service.ask_stream(KB, QUESTION)]
    finally:
        fake.stream_delay = 0.0
    first_delta_at = next(at for at, update in arrivals if update.delta)
    final_at, last = arrivals[-1]
    final = last.answer
    assert isinstance(final, Answer) and final.mode == "llm"
    assert final_at - first_delta_at >= 0.3  # streamed, not buffered until the end


def test_a_stream_stalling_mid_answer_keeps_what_arrived_marked_as_cut_off(
    service: DocLens, fake: FakeOpenAI, reconfigure: Reconfigure
):
    reconfigure(DOCLENS_LLM_TIMEOUT="1")
    service.search(KB, QUESTION)  # the first question's set-up (and its translation) is not what is timed
    fake.hang_next(60, after_chunks=2, path=CHAT_PATH)
    started = time.monotonic()
    _found, *steps, last = list(service.ask_stream(KB, QUESTION))
    final = last.answer
    # did not wait for the stalled stream (the bound leaves room for a search on a busy 2-core machine)
    assert time.monotonic() - started < 30
    assert steps and all(step.delta and not step.done for step in steps)  # what had arrived was shown
    assert isinstance(final, Answer) and final.mode == "llm" and "cut off" in final.notice
    assert final.answer == "".join(step.delta for step in steps).rstrip() + " …"


def test_ask_returns_the_final_answer_with_latex_as_written(service: DocLens, fake: FakeOpenAI):
    reply = r"基态能量不为零 [1]。能级公式为 $$E_n = \hbar\omega\left(n+\frac{1}{2}\right)$$ [1]，其中 $n \ge 0$。"
    fake.queue_reply(reply)
    answer = service.ask(KB, QUESTION)
    assert answer.mode == "llm" and answer.question == QUESTION
    assert answer.answer == reply
    [request] = answer_requests(fake)
    assert_sources_numbered_in_prompt(request, answer)
    assert answer.sources[0].file == PHYSICS


def test_citations_of_sources_that_do_not_exist_are_removed(service: DocLens, fake: FakeOpenAI):
    fake.queue_reply("基态能量不为零 [1][9]，见 [12]。")
    answer = service.ask(KB, QUESTION)
    assert answer.mode == "llm"
    assert_citations_valid(answer)
    assert "[9]" in answer.notice and "[12]" in answer.notice


def test_follow_up_is_condensed_before_retrieval_and_the_standalone_question_searched(
    service: DocLens, fake: FakeOpenAI, reconfigure: Reconfigure
):
    # With expansion on, the retriever's translation request shows which question was searched.
    reconfigure(DOCLENS_RETRIEVAL_QUERY_EXPANSION="true")
    standalone = "简谐振子的零点能是多少？"
    fake.queue_reply(standalone, "What is the zero-point energy of the harmonic oscillator?")
    history = [
        {"role": "user", "content": "简谐振子是什么？"},
        {"role": "assistant", "content": "简谐振子是量子力学中最重要的模型之一 [1]。"},
    ]
    answer = service.ask(KB, "它的零点能是多少？", history=history)
    chats = fake.chat_requests()
    # The user's own words are searched beside the rewrite (issue 12 item 21): both get translated.
    assert [request_kind(r) for r in chats] == ["condense", "translate", "translate", "answer"]
    assert "简谐振子是什么" in chats[0].text() and "它的零点能是多少" in chats[0].text()
    assert {chats[1].messages[-1]["content"], chats[2].messages[-1]["content"]} == {"它的零点能是多少？", standalone}
    assert answer.mode == "llm" and answer.question == standalone
    # The model still sees the conversation and the user's own words.
    assert chats[3].messages[-1]["content"].endswith("Question: 它的零点能是多少？")
    assert any(m["content"] == "简谐振子是什么？" for m in chats[3].messages)


# ---------------------------------------------------------------- figures


def test_figure_question_sends_the_png_page_and_page_text_to_the_vision_model(service: DocLens, fake: FakeOpenAI):
    figure = physics_figure(service)
    answer = service.ask(KB, FIGURE_QUESTION, figure_id=figure.id)
    assert answer.mode == "vision" and answer.figure is not None and answer.figure.id == figure.id
    [request] = fake.vision_requests()
    assert request.body["model"] == "some-vision-model"
    [(mime, data)] = images_in(request)
    assert mime == "image/png" and data == Path(figure.path).read_bytes()
    prompt = request.text()
    assert f"page {figure.page}" in prompt and figure.file in prompt and FIGURE_QUESTION in prompt
    page_text = " ".join(service.open_kb(KB).registry.page_text(figure.doc_id, figure.page).split())
    assert page_text and page_text in prompt
    assert f"figure p{figure.page} of {figure.file}" in answer.answer  # says which figure it is about

    following = service.ask(KB, QUESTION)  # the figure lock is for one call only
    assert following.mode == "llm" and following.figure is None
    assert len(fake.vision_requests()) == 1


@pytest.mark.parametrize(
    ("status", "times", "body", "reason"),
    [
        (400, 1, IMAGE_REFUSED_BODY, "does not accept images"),
        (500, 3, None, "HTTP 500"),  # max_retries=2: three failures in a row
    ],
    ids=["no-image-input", "server-error"],
)
def test_vision_failure_falls_back_to_the_figure_text_and_the_app_keeps_serving(
    service: DocLens, fake: FakeOpenAI, status: int, times: int, body: Optional[dict], reason: str
):
    figure = physics_figure(service)
    fake.fail_next(status, body=body, times=times, path=CHAT_PATH, match=lambda r: r.is_vision)
    answer = service.ask(KB, FIGURE_QUESTION, figure_id=figure.id)
    assert answer.mode == "vision-fallback"
    assert "vision model could not read the image" in answer.answer and reason in answer.notice
    assert len(fake.vision_requests()) == times
    text_only = [r for r in fake.chat_requests() if not r.is_vision]
    assert len(text_only) == 1 and figure.file in text_only[0].text()

    assert service.ask(KB, QUESTION).mode == "llm"


# ---------------------------------------------------------------- model failures


def test_rate_limit_is_waited_out_then_the_model_answers(service: DocLens, fake: FakeOpenAI):
    fake.fail_next(429, headers={"Retry-After": "1"}, path=CHAT_PATH)
    started = time.monotonic()
    answer = service.ask(KB, QUESTION)
    assert answer.mode == "llm" and not answer.notice
    assert time.monotonic() - started >= 0.9  # Retry-After was honoured
    assert len(answer_requests(fake)) == 2


def test_refused_key_gives_an_extractive_answer_naming_the_problem_not_the_key(service: DocLens, fake: FakeOpenAI):
    fake.fail_next(401, body=KEY_LEAK_BODY, path=CHAT_PATH)
    answer = service.ask(KB, QUESTION)
    assert answer.mode == "extractive" and answer.sources
    assert "401" in answer.notice and "API key" in answer.notice
    assert API_KEY not in str(answer.to_dict())
    assert len(answer_requests(fake)) == 1  # a refused key is not retried


def test_a_hanging_model_times_out_into_an_extractive_answer(
    service: DocLens, fake: FakeOpenAI, reconfigure: Reconfigure
):
    reconfigure(DOCLENS_LLM_TIMEOUT="1")
    service.search(KB, QUESTION)  # the first question's set-up (and its translation) is not what is timed
    fake.hang_next(60, path=CHAT_PATH)
    started = time.monotonic()
    answer = service.ask(KB, QUESTION)
    assert time.monotonic() - started < 30  # did not wait for the hanging model
    assert answer.mode == "extractive" and "timed out" in answer.notice and answer.sources


# ---------------------------------------------------------------- no model


def test_without_a_model_answers_quote_sources_with_file_page_and_relevance(
    service: DocLens, fake: FakeOpenAI, reconfigure: Reconfigure
):
    reconfigure(model=False)
    history = [{"role": "user", "content": "简谐振子是什么？"}, {"role": "assistant", "content": "一个模型。"}]
    answer = service.ask(KB, QUESTION, history=history)
    assert answer.mode == "extractive"
    assert "No language model is configured" in answer.notice and answer.notice in answer.answer
    assert answer.sources and answer.sources[0].file == PHYSICS
    for number, source in enumerate(answer.sources[:3], start=1):
        assert source.page >= 1 and 0 < source.relevance <= 100
        assert f"[{number}] {source.file}, p" in answer.answer
    assert "relevance" in answer.answer
    assert fake.requests == []


def test_an_unreachable_model_server_gives_an_extractive_answer(service: DocLens, reconfigure: Reconfigure):
    # Expansion and history too: translating and condensing must fail quietly as well.
    reconfigure(base_url=stopped_server_url(), DOCLENS_RETRIEVAL_QUERY_EXPANSION="true")
    history = [{"role": "user", "content": "简谐振子是什么？"}, {"role": "assistant", "content": "一个模型。"}]
    answer = service.ask(KB, "它的能级公式是什么？", history=history)
    assert answer.mode == "extractive" and "cannot reach" in answer.notice and answer.sources
    assert service.ask(KB, QUESTION).mode == "extractive"


# ---------------------------------------------------------------- summaries


def test_summary_is_generated_once_cached_and_regenerated_on_refresh(service: DocLens, fake: FakeOpenAI):
    kb = service.open_kb(KB, check_model=False)
    doc = kb.find_document(PHYSICS)
    assert kb.registry.summary(doc.doc_id) is None
    first = r"**概述**：简谐振子的能级为 $$E_n = \hbar\omega\left(n+\frac{1}{2}\right)$$，基态能量 $\frac{1}{2}\hbar\omega$ 不为零。"
    fake.queue_reply(first)
    assert service.summary(KB, PHYSICS) == first
    [request] = fake.chat_requests()
    assert PHYSICS in request.text() and "简谐振子" in request.text()

    assert service.summary(KB, PHYSICS) == first
    assert len(fake.chat_requests()) == 1  # served from the cache

    second = r"**更新**：$$\hat{H} = \frac{p^2}{2m} + \frac{1}{2}m\omega^2x^2$$"
    fake.queue_reply(second)
    assert service.summary(KB, PHYSICS, refresh=True) == second
    assert len(fake.chat_requests()) == 2
    assert service.summary(KB, PHYSICS) == second


def test_summary_without_a_working_model_shows_first_passages_and_caches_nothing(
    service: DocLens, fake: FakeOpenAI, reconfigure: Reconfigure
):
    kb = service.open_kb(KB, check_model=False)
    doc = kb.find_document(COMPUTING)
    first_chunk = service.store.chunks(kb.collection, doc_id=doc.doc_id, limit=1)[0].content
    opening = " ".join(first_chunk.split())[:40]

    fake.fail_next(401, body=KEY_LEAK_BODY, path=CHAT_PATH)
    failed = service.summary(KB, COMPUTING)
    assert "The model failed" in failed and opening in failed and API_KEY not in failed

    reconfigure(model=False)
    text = service.summary(KB, COMPUTING)
    assert "No language model is configured" in text and COMPUTING in text and opening in text
    assert kb.registry.summary(doc.doc_id) is None


# ---------------------------------------------------------------- connection checks


def test_connection_checks_pass_against_the_fake_server(service: DocLens, fake: FakeOpenAI, reconfigure: Reconfigure):
    ok, message = service.check_llm()
    assert ok and "some-model" in message
    ok, vision_message = service.check_llm(vision=True)
    assert ok and "some-vision-model" in vision_message
    [(mime, _)] = images_in(fake.vision_requests()[0])
    assert mime == "image/png"

    reconfigure(DOCLENS_EMBEDDING_PROVIDER="openai", DOCLENS_EMBEDDING_MODEL="fake-embedding")
    ok, embedding_message = service.check_embedding()
    assert ok and "fake-embedding" in embedding_message
    assert any(r.path.endswith("/embeddings") for r in fake.requests)
    assert all(API_KEY not in m for m in (message, vision_message, embedding_message))


def test_connection_checks_fail_clearly_without_a_model(service: DocLens, reconfigure: Reconfigure):
    reconfigure(model=False)
    for vision in (False, True):
        ok, message = service.check_llm(vision=vision)
        assert not ok and "no model configured" in message.lower()
    reconfigure(model=False, DOCLENS_EMBEDDING_PROVIDER="openai", DOCLENS_EMBEDDING_MODEL="fake-embedding")
    ok, message = service.check_embedding()
    assert not ok and "no endpoint" in message


def test_connection_checks_report_a_refused_key_without_showing_it(
    service: DocLens, fake: FakeOpenAI, reconfigure: Reconfigure
):
    fake.fail_next(401, body=KEY_LEAK_BODY, times=2, path=CHAT_PATH)
    for vision in (False, True):
        ok, message = service.check_llm(vision=vision)
        assert not ok and "401" in message and API_KEY not in message

    reconfigure(DOCLENS_EMBEDDING_PROVIDER="openai", DOCLENS_EMBEDDING_MODEL="fake-embedding")
    fake.fail_next(401, body=KEY_LEAK_BODY, path="/embeddings")
    ok, message = service.check_embedding()
    assert not ok and "401" in message and API_KEY not in message


# ---------------------------------------------------------------- query expansion


def test_query_expansion_translates_each_question_once(service: DocLens, fake: FakeOpenAI, reconfigure: Reconfigure):
    reconfigure(DOCLENS_RETRIEVAL_QUERY_EXPANSION="true")
    translation = "What is the energy level formula of the harmonic oscillator?"
    fake.queue_reply(translation)
    result = service.search(KB, QUESTION)
    assert result.queries == [QUESTION, translation]
    [request] = translation_requests(fake)
    assert request.messages[-1]["content"] == QUESTION

    again = service.search(KB, QUESTION)
    assert again.queries == result.queries
    assert len(fake.chat_requests()) == 1  # the translation was cached


def test_no_translation_request_when_query_expansion_is_off(
    service: DocLens, fake: FakeOpenAI, reconfigure: Reconfigure
):
    reconfigure(DOCLENS_RETRIEVAL_QUERY_EXPANSION="false")
    result = service.search(KB, QUESTION)
    assert result.queries == [QUESTION] and result.sources
    assert fake.chat_requests() == []
