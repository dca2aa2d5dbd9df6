"""LLMClient against a real HTTP fake of an OpenAI-compatible endpoint."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from backend.errors import LLMError
from backend.llm.client import LLMClient, LLMCutOff, LLMStatusError, stream_char_limit
from tests.conftest import make_settings
from tests.support.fake_openai import FakeOpenAI, default_reply, images_in

API_KEY = "sk-test-secret-0123456789"
HELLO = [{"role": "user", "content": "hello there"}]
LONG_REPLY = "DocLens basalt answer from the sources, written slowly and at length. " * 4  # 24 chunks


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def make_client(tmp_path: Path, base_url: str, *, api_key: str = API_KEY, **env: str) -> LLMClient:
    settings_env = {
        "DOCLENS_LLM_BASE_URL": base_url,
        "DOCLENS_LLM_MODEL": "fake-chat",
        "DOCLENS_LLM_QPS": "50",
        "DOCLENS_LLM_TIMEOUT": "5",
        **env,
    }
    if api_key:
        settings_env["DOCLENS_LLM_API_KEY"] = api_key
    return LLMClient(make_settings(tmp_path / "data", **settings_env), backoff_base=0.2)


# ---------------------------------------------------------------- plain calls


def test_chat_returns_reply_and_sends_key_and_model(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url)
    assert client.chat(HELLO) == "Echo: hello there"
    request = fake.last_chat()
    assert request.headers["Authorization"] == f"Bearer {API_KEY}"
    assert request.body["model"] == "fake-chat"
    assert request.body["messages"] == HELLO
    assert request.body.get("stream") is not True


def test_stream_chat_yields_deltas_that_join_to_the_reply(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url)
    fake.queue_reply("Streaming works: $$E=mc^2$$ and \\frac{a}{b} stay intact [1].")
    deltas = list(client.stream_chat(HELLO))
    assert len(deltas) > 1
    assert "".join(deltas) == "Streaming works: $$E=mc^2$$ and \\frac{a}{b} stay intact [1]."
    assert fake.last_chat().body["stream"] is True
    assert fake.last_chat().headers["Authorization"] == f"Bearer {API_KEY}"


def test_not_configured_client_raises_clear_error(tmp_path: Path) -> None:
    client = LLMClient(make_settings(tmp_path / "data"))
    assert not client.configured
    with pytest.raises(LLMError, match="no language model is configured"):
        client.chat(HELLO)
    ok, message = client.check_connection()
    assert not ok and "No model configured" in message


def test_check_connection(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url)
    ok, message = client.check_connection()
    assert ok and "fake-chat" in message and fake.base_url in message
    fake.fail_next(401)
    ok, message = client.check_connection()
    assert not ok and "401" in message and API_KEY not in message


def test_check_connection_of_the_vision_model(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url, DOCLENS_LLM_VISION_MODEL="fake-vision")
    ok, message = client.check_connection(vision=True)
    assert ok and "vision model fake-vision" in message
    mime, data = images_in(fake.last_chat())[0]
    assert mime == "image/png" and data.startswith(b"\x89PNG")
    fake.fail_next(400, body={"error": {"message": "image input is not supported"}})
    ok, message = client.check_connection(vision=True)
    assert not ok and "400" in message and "may not accept images" in message


def test_vision_sends_image_as_data_url_to_vision_model(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url, DOCLENS_LLM_VISION_MODEL="fake-vision")
    image = b"\xff\xd8\xff\xe0" + b"jpeg-bytes" * 10
    reply = client.vision("What does the chart show?", image, "image/jpeg", system="Describe figures.")
    assert "image/jpeg" in reply
    request = fake.vision_requests()[-1]
    assert request.body["model"] == "fake-vision"
    assert images_in(request) == [("image/jpeg", image)]
    assert "What does the chart show?" in request.text()


# ---------------------------------------------------------------- failures (the transport's own tests: test_openai_compat.py)


def test_failures_are_llm_errors_with_their_status_and_without_the_key(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url)
    fake.fail_next(401, body={"error": {"message": f"Incorrect API key provided: {API_KEY}"}})
    with pytest.raises(LLMStatusError) as caught:
        client.chat(HELLO)
    assert caught.value.status == 401 and "refused the API key (401)" in str(caught.value)
    assert "DOCLENS_LLM_API_KEY" in str(caught.value) and API_KEY not in str(caught.value)


def test_a_web_page_instead_of_the_api_is_reported(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url)
    page = {"body": "<html>Welcome</html>", "headers": {"Content-Type": "text/html"}}
    fake.fail_next(200, **page)
    with pytest.raises(LLMError, match="did not answer like an OpenAI-compatible API"):
        client.chat(HELLO)
    fake.fail_next(200, **page)
    with pytest.raises(LLMError, match="/v1"):
        list(client.stream_chat(HELLO))
    ok, _ = client.check_connection()
    assert ok  # the next request is served normally again


def test_stream_retries_before_the_first_token(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url)
    fake.fail_next(503)
    assert "".join(client.stream_chat(HELLO)) == "Echo: hello there"
    assert len(fake.chat_requests()) == 2


def test_a_stream_that_stalls_after_its_first_tokens_is_cut_off_not_failed(tmp_path: Path, fake: FakeOpenAI) -> None:
    """Issue 31 item 5: three chunks, then silence past llm.timeout. What arrived is the reply so far: the
    stream ends with LLMCutOff (the answer keeps it), not a failure that throws it away; never retried."""
    client = make_client(tmp_path, fake.base_url, DOCLENS_LLM_TIMEOUT="1")
    fake.queue_reply(LONG_REPLY)
    fake.hang_next(5, after_chunks=3)
    received: list[str] = []
    with pytest.raises(LLMCutOff, match=r"cut off: nothing more arrived within 1 s \(llm.timeout\)"):
        for delta in client.stream_chat(HELLO):
            received.append(delta)
    assert "".join(received) == LONG_REPLY[:36]  # the three chunks
    assert len(fake.chat_requests()) == 1


# ---------------------------------------------------------------- bounded replies (issue 11 items 9 and 10)


def test_a_huge_reply_is_refused_while_other_questions_are_answered(tmp_path: Path, fake: FakeOpenAI) -> None:
    """An endpoint that ignores max_tokens sends 20 MB: we stop reading at the reply limit, and a
    question from another user in the meantime is answered as usual."""

    def reply(body: dict[str, Any]) -> str:
        asked = body["messages"][-1]["content"]
        return "x" * 20_000_000 if asked == "translate" else default_reply(body)

    fake.reply = reply
    client = make_client(tmp_path, fake.base_url)
    other: list[tuple[float, str]] = []
    started = time.monotonic()

    def other_user() -> None:
        other.append((time.monotonic(), client.chat(HELLO)))

    with pytest.raises(LLMStatusError, match=r"sent a reply larger than \d+ KB"):
        thread = threading.Thread(target=other_user)
        thread.start()
        client.chat([{"role": "user", "content": "translate"}], max_tokens=200)
    thread.join(timeout=10)
    assert other and other[0][1] == "Echo: hello there" and other[0][0] - started < 3
    assert time.monotonic() - started < 5


def test_a_plain_reply_that_trickles_in_past_the_timeout_is_abandoned(tmp_path: Path, fake: FakeOpenAI) -> None:
    """Every piece arrives within the read timeout, but the whole reply would take ~10 s."""
    client = make_client(tmp_path, fake.base_url, DOCLENS_LLM_TIMEOUT="1")
    fake.drip_next(0.25)
    started = time.monotonic()
    with pytest.raises(LLMStatusError, match=r"took longer than 1 s to send its reply"):
        client.chat(HELLO)
    assert time.monotonic() - started < 2.5
    assert client.chat(HELLO) == "Echo: hello there"  # the next call is served normally


def test_a_slow_stream_stops_at_its_deadline_and_says_it_was_cut_off(tmp_path: Path, fake: FakeOpenAI) -> None:
    """12+ slow chunks, each within the read timeout: the stream as a whole gets llm.timeout."""
    client = make_client(tmp_path, fake.base_url, DOCLENS_LLM_TIMEOUT="1")
    fake.queue_reply(LONG_REPLY)
    fake.drip_next(0.3)
    received: list[str] = []
    started = time.monotonic()
    with pytest.raises(LLMCutOff, match=r"cut off: it took longer than 1 s \(llm.timeout\)"):
        for delta in client.stream_chat(HELLO):
            received.append(delta)
    assert time.monotonic() - started < 2.5
    assert received and LONG_REPLY.startswith("".join(received)) and len("".join(received)) < len(LONG_REPLY)


def test_a_stream_longer_than_max_tokens_allows_is_cut_at_the_limit(tmp_path: Path) -> None:
    with FakeOpenAI(stream_chunk_chars=50_000) as big:
        client = make_client(tmp_path, big.base_url)
        big.queue_reply("y" * 2_000_000)
        received: list[str] = []
        with pytest.raises(LLMCutOff, match=r"passed \d+ characters"):
            for delta in client.stream_chat(HELLO, max_tokens=100):
                received.append(delta)
    assert len("".join(received)) == stream_char_limit(100)


def test_a_stream_cut_off_mid_way_is_reported_after_its_text(tmp_path: Path, fake: FakeOpenAI) -> None:
    """The connection closes after two chunks, with no finish_reason and no [DONE]."""
    client = make_client(tmp_path, fake.base_url)
    fake.queue_reply(LONG_REPLY)
    fake.cut_next(2)
    received: list[str] = []
    with pytest.raises(LLMCutOff, match="the connection closed before the model finished") as caught:
        for delta in client.stream_chat(HELLO):
            received.append(delta)
    assert "".join(received) == LONG_REPLY[:24]
    assert fake.base_url in str(caught.value)
    assert len(fake.chat_requests()) == 1  # text was shown: not retried


def test_a_stream_cut_before_its_first_token_is_retried(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url)
    fake.cut_next(0)
    assert "".join(client.stream_chat(HELLO)) == "Echo: hello there"
    assert len(fake.chat_requests()) == 2


def test_a_stream_stopped_by_max_tokens_is_reported_as_cut_off(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url)
    fake.finish_reason = "length"
    with pytest.raises(LLMCutOff, match=r"reached the 1024-token limit \(llm.max_tokens\)"):
        "".join(client.stream_chat(HELLO))


def test_fake_server_runs_as_a_process_and_is_scriptable(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys
    import urllib.request

    from tests.conftest import REPO_ROOT

    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.fake_openai", "--port", "0"],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip().rsplit(" ", 1)[-1]
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        root = base_url[: -len("/v1")]
        script = urllib.request.Request(
            f"{root}/_fake/reply", data=json.dumps({"text": "scripted"}).encode(), method="POST"
        )
        urllib.request.urlopen(script, timeout=5).read()
        client = make_client(tmp_path, base_url)
        assert client.chat(HELLO) == "scripted"
        recorded = json.loads(urllib.request.urlopen(f"{root}/_fake/requests", timeout=5).read())
        assert [r["path"] for r in recorded] == ["/v1/chat/completions"]
        assert recorded[0]["headers"]["Authorization"] == f"Bearer {API_KEY}"
    finally:
        process.terminate()
        process.wait(timeout=5)


# ---------------------------------------------------------------- issue 31 items 4 and 6


PLAIN_KEY = "SECRET-k3y-0123456789abcdef"  # not in sk- form: only the configured value gives it away
OTHER_SECRET = "milvus-token-9876543210"  # another configured secret (the Milvus token)
ECHO = f"your key is {{header:Authorization}}; alone: {PLAIN_KEY}; again {{header:Authorization}}; {OTHER_SECRET}."


@pytest.mark.parametrize("chunk_chars", [1, 5, 12])
def test_a_key_echoed_by_the_endpoint_reaches_neither_the_reply_nor_the_log(
    tmp_path: Path, chunk_chars: int, caplog: pytest.LogCaptureFixture
) -> None:
    """The endpoint sends the request's Authorization header and the key alone back, plain and streamed
    (the key split across chunks); neither the text nor any log line holds a configured secret."""
    caplog.set_level(logging.DEBUG)
    with FakeOpenAI(stream_chunk_chars=chunk_chars) as echoing:
        client = make_client(tmp_path, echoing.base_url, api_key=PLAIN_KEY, DOCLENS_MILVUS_TOKEN=OTHER_SECRET)
        echoing.queue_reply(ECHO, ECHO, ECHO)
        plain = client.chat(HELLO)
        streamed = list(client.stream_chat(HELLO))
        sent = ECHO.replace("{header:Authorization}", f"Bearer {PLAIN_KEY}")
        echoing.cut_next(-(-(sent.index(OTHER_SECRET) + 6) // chunk_chars))  # cut inside the last secret
        with pytest.raises(LLMCutOff):
            for delta in client.stream_chat(HELLO):
                streamed.append(delta)
        assert echoing.last_chat().header("Authorization") == f"Bearer {PLAIN_KEY}"
    for text in (plain, "".join(streamed)):
        assert "your key is Bearer ***; alone: ***; again Bearer ***;" in text, text
        assert PLAIN_KEY[:6] not in text and OTHER_SECRET[:6] not in text
    assert PLAIN_KEY not in caplog.text and OTHER_SECRET not in caplog.text


def test_scrubbing_a_stream_holds_back_only_what_may_start_a_secret(tmp_path: Path, fake: FakeOpenAI) -> None:
    """Chinese text and words pass at once (a word at most is held until the next piece shows it is not a
    key), so the answer still streams."""
    client = make_client(tmp_path, fake.base_url)
    fake.queue_reply("注意力机制使用softmax计算权重，" * 5 + " and the end.")
    deltas = list(client.stream_chat(HELLO))
    assert "".join(deltas) == "注意力机制使用softmax计算权重，" * 5 + " and the end."
    assert len(deltas) > 5 and deltas[0].startswith("注意力机制")


def test_an_oversized_reply_to_a_stream_is_named_as_too_large(tmp_path: Path, fake: FakeOpenAI) -> None:
    """Issue 31 item 6: an endpoint that ignores ``stream`` (and max_tokens) sends megabytes of JSON; the
    error says the reply was larger than the limit, not that the endpoint is not OpenAI-compatible. One
    huge event without an event break is stopped at the limit as it arrives."""
    client = make_client(tmp_path, fake.base_url)
    huge = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "x" * 3_000_000}}]}
    fake.fail_next(200, body=huge)
    with pytest.raises(LLMStatusError, match=r"sent a reply larger than \d+ KB") as caught:
        list(client.stream_chat(HELLO, max_tokens=200))
    assert "OpenAI-compatible" not in str(caught.value)
    with FakeOpenAI(stream_chunk_chars=20_000_000) as one_event:
        client = make_client(tmp_path, one_event.base_url)
        one_event.queue_reply("y" * 20_000_000)
        started = time.monotonic()
        with pytest.raises(LLMStatusError, match=r"sent a reply larger than \d+ KB"):
            list(client.stream_chat(HELLO, max_tokens=200))
        assert time.monotonic() - started < 3
