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
