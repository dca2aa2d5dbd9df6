"""The app's API through gradio_client: create a knowledge base, upload, ask, delete."""

from __future__ import annotations

import pytest

from tests.ui.conftest import SAMPLE_PDF, RunningApp

pytestmark = pytest.mark.slow


def test_create_upload_ask_delete(doclens_app: RunningApp) -> None:
    from gradio_client import Client, handle_file

    client = Client(doclens_app.url, verbose=False)
    kb = client.predict("api-test", api_name="/create_kb")
    assert kb["name"] == "api-test"

    results = client.predict("api-test", [handle_file(str(SAMPLE_PDF))], api_name="/upload")
    assert [r["status"] for r in results] == ["indexed"]
    assert results[0]["file"] == SAMPLE_PDF.name  # the user's name, not Gradio's temp name

    docs = client.predict("api-test", api_name="/documents")
    assert [d["file"] for d in docs] == [SAMPLE_PDF.name]

    answer = client.predict("api-test", "What is the key formula?", api_name="/ask")
    assert answer["answer"] and answer["sources"]
    assert all(s["file"] == SAMPLE_PDF.name and s["page"] >= 1 for s in answer["sources"])
    assert doclens_app.fake.chat_requests(), "the answer should come from the (fake) model"

    assert "deleted" in client.predict("api-test", api_name="/delete_kb")
    assert "api-test" not in [k["name"] for k in client.predict(api_name="/list_kbs")]


def test_errors_are_one_line_messages(doclens_app: RunningApp) -> None:
    from gradio_client import Client

    client = Client(doclens_app.url, verbose=False)
    with pytest.raises(Exception, match="does not exist"):
        client.predict("no-such-kb", "anything?", api_name="/ask")


def test_the_api_lists_no_temporary_evaluation_kb(doclens_app: RunningApp) -> None:
    """As in the UI: "eval 2026…" (made and deleted again by an evaluation) is no one else's to see."""
    from gradio_client import Client

    client = Client(doclens_app.url, verbose=False)
    client.predict("eval 20261201-101010", api_name="/create_kb")
    try:
        assert "eval 20261201-101010" not in [k["name"] for k in client.predict(api_name="/list_kbs")]
    finally:
        client.predict("eval 20261201-101010", api_name="/delete_kb")


def two_kbs(client, tmp_path, prefix: str) -> tuple[str, str]:
    """Two knowledge bases of one short PDF each, made through the API."""
    from gradio_client import handle_file

    from tests.support.text_pdf import write_text_pdf

    names = (f"{prefix}-harbour", f"{prefix}-mountain")
    for kb, file, sentence in (
        (names[0], "lighthouse.pdf", "The Verity lighthouse was first lit in 1871 by Ada Quill."),
        (names[1], "observatory.pdf", "The Sable observatory stands at a height of 3120 metres."),
    ):
        client.predict(kb, api_name="/create_kb")
        pdf = write_text_pdf(tmp_path / file, [[sentence]])
        assert [r["status"] for r in client.predict(kb, [handle_file(str(pdf))], api_name="/upload")] == ["indexed"]
    return names


def test_ask_and_search_take_a_list_of_kbs(doclens_app: RunningApp, tmp_path) -> None:
    from gradio_client import Client

    client = Client(doclens_app.url, verbose=False)
    harbour, mountain = two_kbs(client, tmp_path, "api-list")
    question = "When was the lighthouse lit and how high is the observatory?"
    answer = client.predict([harbour, mountain], question, api_name="/ask")
    assert {(s["kb"], s["file"]) for s in answer["sources"]} == {
        (harbour, "lighthouse.pdf"),
        (mountain, "observatory.pdf"),
    }
    found = client.predict([harbour, mountain], question, [f"{mountain}/observatory.pdf"], api_name="/search")
    assert {(s["kb"], s["file"]) for s in found["sources"]} == {(mountain, "observatory.pdf")}
    single = client.predict(harbour, question, api_name="/search")  # the old single-string form
    assert {s["kb"] for s in single["sources"]} == {harbour}


def test_ask_stream_sends_the_sources_first_then_the_words_then_the_answer(doclens_app: RunningApp, tmp_path) -> None:
    """What a client shows while the model writes: the sources as soon as they are found."""
    from gradio_client import Client

    client = Client(doclens_app.url, verbose=False)
    harbour, _ = two_kbs(client, tmp_path, "api-stream")
    job = client.submit(harbour, "When was the lighthouse lit?", api_name="/ask_stream")
    outputs = list(job)
    kinds = [next(iter(o)) for o in outputs]
    assert kinds[0] == "sources" and kinds[-1] == "answer" and set(kinds[1:-1]) == {"delta"}, kinds
    assert outputs[0]["sources"][0]["file"] == "lighthouse.pdf" and outputs[0]["confidence"] > 0
    answer = outputs[-1]["answer"]
    assert answer["answer"] and [s["file"] for s in answer["sources"]] == [s["file"] for s in outputs[0]["sources"]]
    assert "".join(o["delta"] for o in outputs[1:-1]).strip().startswith(answer["answer"][:20])
