"""ChatHandlers (ui/chat/handlers.py) over a real DocLens: streamed answers, readable errors, figure lock,
history, citations. Fixtures and helpers: tests/ui/handler_support.py.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import pytest

from backend.answering.extractive import extractive_answer
from backend.processes import free_port
from backend.service import DocLens
from backend.types import Figure, Source
from tests.conftest import SAMPLES, make_settings
from tests.support.fake_openai import FakeOpenAI
from tests.ui.handler_support import (
    EMPTY_KB,
    KB,
    OFF_TOPIC,
    PHYSICS,
    QUESTION,
    REPLY,
    WARN,
    answer_text,
    is_condense,
    last_message,
    model_env,
    run_send,
)
from ui.chat import panels
from ui.chat.handlers import ChatHandlers, answer_markdown, normalize_messages
from ui.common import ALL_DOCUMENTS, kb_names
from ui.i18n.strings import set_session_language
from ui.latex import CURRENCY_HTML

pytestmark = pytest.mark.usefixtures("fake_model")  # each test starts on the fake model


def test_answer_streams_then_fills_the_panel(service: DocLens, fake: FakeOpenAI) -> None:
    fake.queue_reply(REPLY)
    updates = run_send(service)
    assert len(updates) >= 5  # question shown, sources found, several deltas (12 characters each), final
    assert updates[0][0][-1] == {"role": "assistant", "content": ""}
    found = updates[1]  # the sources before the model writes, clickable (this answer's in the state)
    assert found[0][-1]["content"] == "" and found[2].raw_samples[0][1] == PHYSICS and PHYSICS in found[4]
    assert len(found[8]) == 1 and found[8][0][0]["file"] == PHYSICS
    streamed = [update[0][-1]["content"] for update in updates[2:-1]]
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


def test_a_language_switch_while_the_answer_streams_draws_its_panel_in_the_new_language(
    service: DocLens, fake: FakeOpenAI
) -> None:
    """The switch redraws the panel at once; the answer still streaming must not then draw it in the
    language it started in."""
    fake.queue_reply(REPLY)
    request = SimpleNamespace(username=None, session_hash="switching-mid-answer")
    set_session_language("en", request)
    updates = ChatHandlers(service).send(QUESTION, KB, ALL_DOCUMENTS, [], [], None, request=request)
    next(updates)  # the question is shown; the answer has started in English
    set_session_language("zh", request)
    final = list(updates)[-1]
    assert "置信度" in final[3] and "Confidence" not in final[3]
    assert "来源" in final[0][-1]["metadata"]["title"]


def test_an_off_topic_question_abstains_without_asking_the_model(service: DocLens, fake: FakeOpenAI) -> None:
    """Issue 30 item 3: below confidence.abstain_below the chat says the documents do not seem to hold the
    answer, quotes the closest passages as such, and the model writes nothing from them."""
    final = run_send(service, question=OFF_TOPIC)[-1]
    assert 'data-mode="abstained"' in final[3] and "dl-abstained" in final[3]
    assert "closest, not an answer" in final[3] and "not in your documents" in final[3]
    text = answer_text([final])
    assert text.count("Your documents do not seem to hold the answer") == 1 and "closest, not an answer" in text
    assert "dl-cite" in text and "> " in text  # the closest passages are quoted, each with its citation
    assert not [r for r in fake.chat_requests() if r.body.get("stream")]


def test_low_confidence_warns(service: DocLens, data_dir: Path, fake: FakeOpenAI) -> None:
    # no model: an extractive answer with a notice (abstaining is off, so the warning is what is shown)
    service.reconfigure(make_settings(data_dir, DOCLENS_CONFIDENCE_ABSTAIN_BELOW="0"))
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
        service.reconfigure(make_settings(data_dir, **model_env(f"http://127.0.0.1:{free_port()}/v1")))
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


def test_user_text_and_quoted_passages_are_not_math(service: DocLens, data_dir: Path) -> None:
    """Item 3: the user's "$5 and $10" and a quoted "(M$)" keep their dollar signs out of KaTeX."""
    user = run_send(service, question="$5 and $10 是多少钱？")[0][0][-2]
    assert user["role"] == "user" and "$" not in user["content"] and user["content"].count(CURRENCY_HTML) == 2
    source = Source(
        "report.pdf", "d1", 3, 3, 0, "| Region | Revenue (M$) | Cost (M$) |\n| EU | 12 | 9 |", relevance=80.0
    )
    answer = extractive_answer("revenue by region", [source], 80.0)  # what a question without a model gets
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
    first_row = panels.table_order([s["relevance"] for s in answer_sources[1]])[0]  # the table: newest answer's
    newest = answer_sources[1][first_row]
    expected = f"[{first_row + 1}] {newest['file']} · p{newest['page']}"
    assert handlers.show_page(0, KB, answer_sources)["label"] == expected
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


def shown_relevance(row: list[str]) -> int:
    return int(row[3].rstrip("%"))


def test_the_sources_table_is_in_the_order_of_its_relevance(service: DocLens) -> None:
    """Issue 26 item 3: the table read 60 %, 88 % (the page the question names comes first in the ranking).
    Rows go by the relevance shown; each keeps its citation number and a click opens that source."""
    updates = run_send(service, "第2页的简谐振子能级公式", doc_filter=PHYSICS)
    rows, last_sources = updates[-1][2].raw_samples, updates[-1][8]
    shown = [shown_relevance(row) for row in rows]
    assert len(rows) >= 2 and shown == sorted(shown, reverse=True), rows
    assert sorted(int(row[0]) for row in rows) == list(range(1, len(rows) + 1)), "the numbers cite the answer"
    handlers = ChatHandlers(service)
    for index, row in enumerate(rows):
        clicked = handlers.show_page(index, KB, last_sources)
        cited = handlers.show_cited(f"{len(last_sources) - 1}:{row[0]}", KB, last_sources)
        assert clicked["value"] == cited["value"], f"row {index} opens source {row[0]}"


def two_docs(service: DocLens) -> str:
    if "two docs" not in kb_names(service):
        service.create_kb("two docs")
        results = service.ingest("two docs", [SAMPLES / PHYSICS, SAMPLES / "计算机科学示例文档.pdf"])
        assert [r.status for r in results] == ["indexed", "indexed"], results
    return "two docs"


def test_several_picked_documents_scope_the_question_and_the_panel(service: DocLens) -> None:
    """Issue 27 item 1: in the chat, all documents, one, or several picked. The picker is a multiselect;
    a question about the other document, asked with only the physics file picked, finds only it; with both
    picked it finds the other; the summary is of one picked document only."""
    kb, other = two_docs(service), "计算机科学示例文档.pdf"
    handlers = ChatHandlers(service)
    asked = "计算机科学示例文档 讲了哪些算法和数据结构？"
    one = run_send(service, asked, kb=kb, doc_filter=[PHYSICS])[-1][8][-1]
    both = run_send(service, asked, kb=kb, doc_filter=[PHYSICS, other])[-1][8][-1]
    assert {s["file"] for s in one} == {PHYSICS}
    assert both[0]["file"] == other and {s["file"] for s in both} <= {PHYSICS, other}
    assert PHYSICS in handlers.summary(kb, [PHYSICS])
    assert "Choose a document" in handlers.summary(kb, [PHYSICS, other]), "no summary of two at once"
    update = handlers.refresh_documents(kb, [PHYSICS, "gone.pdf"])
    assert update["value"] == [PHYSICS] and set(update["choices"]) == {PHYSICS, other}


def test_a_question_to_a_knowledge_base_still_loading_says_so(service: DocLens) -> None:
    """Issue 28 item 2: a question sent before its KB is loaded waits with a visible message, not an error
    or an empty bubble; the answer replaces the message."""
    from ui.chat.handlers import loading_note

    assert loading_note([], "en") == ""
    assert loading_note(["papers", "a_b"], "en") == (
        "*Loading knowledge base papers, a\\_b (DocLens has just started); the answer follows…*"
    )
    assert "正在加载知识库 papers" in loading_note(["papers"], "zh")
    service.load_all()
    assert service.loading([KB]) == []  # loaded: nothing said
    updates = run_send(service)
    assert updates[0][0][-1] == {"role": "assistant", "content": ""}
