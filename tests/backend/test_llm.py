"""LLMClient against a real HTTP fake of an OpenAI-compatible endpoint."""

from __future__ import annotations

import email.utils
import logging
import socket
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from backend.errors import LLMError
from backend.llm import PLACEHOLDER_API_KEY, LLMClient, RateLimiter, parse_retry_after, scrub
from tests.conftest import make_settings
from tests.support.fake_openai import FakeOpenAI, images_in

API_KEY = "sk-test-secret-0123456789"
HELLO = [{"role": "user", "content": "hello there"}]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def make_client(tmp_path: Path, base_url: str, *, api_key: str = API_KEY, **env: str) -> LLMClient:
    settings_env = {"DOCLENS_LLM_BASE_URL": base_url, "DOCLENS_LLM_MODEL": "fake-chat",
                    "DOCLENS_LLM_QPS": "50", "DOCLENS_LLM_TIMEOUT": "5", **env}
    if api_key:
        settings_env["DOCLENS_LLM_API_KEY"] = api_key
    return LLMClient(make_settings(tmp_path / "data", **settings_env), backoff_base=0.2)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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


def test_placeholder_key_is_sent_when_none_is_configured(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url, api_key="")
    client.chat(HELLO)
    assert fake.last_chat().headers["Authorization"] == f"Bearer {PLACEHOLDER_API_KEY}"


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


# ---------------------------------------------------------------- retries and failures


def test_429_with_retry_after_waits_then_succeeds(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url)
    fake.fail_next(429, headers={"Retry-After": "1"})
    started = time.monotonic()
    assert client.chat(HELLO) == "Echo: hello there"
    elapsed = time.monotonic() - started
    assert len(fake.chat_requests()) == 2
    assert elapsed >= 0.95
    retry_gap = fake.chat_requests()[1].time - fake.chat_requests()[0].time
    assert retry_gap >= 0.95


def test_500_then_success_is_retried(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url)
    fake.fail_next(500)
    assert client.chat(HELLO) == "Echo: hello there"
    assert len(fake.chat_requests()) == 2


def test_repeated_500_gives_up_after_max_retries(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url, DOCLENS_LLM_MAX_RETRIES="2")
    fake.fail_next(500, times=10)
    with pytest.raises(LLMError) as caught:
        client.chat(HELLO)
    assert len(fake.chat_requests()) == 3  # the first try and two retries
    assert "500" in str(caught.value) and fake.base_url in str(caught.value)


def test_hang_past_timeout_fails_quickly_with_clear_message(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url, DOCLENS_LLM_TIMEOUT="1")
    fake.hang_next(10)
    started = time.monotonic()
    with pytest.raises(LLMError, match=r"timed out after 1 s"):
        client.chat(HELLO)
    assert time.monotonic() - started < 3
    assert len(fake.chat_requests()) == 1


def test_401_is_not_retried_and_never_shows_the_key(tmp_path: Path, fake: FakeOpenAI,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="backend")
    client = make_client(tmp_path, fake.base_url)
    # Some providers echo the key back in the error; it must not reach the user or the logs.
    fake.fail_next(401, body={"error": {"message": f"Incorrect API key provided: {API_KEY}"}})
    with pytest.raises(LLMError) as caught:
        client.chat(HELLO)
    message = str(caught.value)
    assert f"the model endpoint {fake.base_url} refused the API key (401)" in message
    assert API_KEY not in message and API_KEY not in repr(caught.value.__context__)
    assert API_KEY not in caplog.text
    assert len(fake.chat_requests()) == 1


def test_403_and_error_bodies_with_the_key_are_scrubbed(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url, DOCLENS_LLM_MAX_RETRIES="0")
    fake.fail_next(403, body={"error": {"message": "forbidden"}})
    with pytest.raises(LLMError, match=r"refused the API key \(403\)"):
        client.chat(HELLO)
    fake.fail_next(500, body={"error": {"message": f"upstream said Authorization: Bearer {API_KEY}"}})
    with pytest.raises(LLMError) as caught:
        client.chat(HELLO)
    assert API_KEY not in str(caught.value)
    assert scrub(f"key {API_KEY} and Bearer abc.def", API_KEY) == "key *** and Bearer ***"


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


def test_a_base_url_without_v1_gets_a_404_message(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url[: -len("/v1")])
    with pytest.raises(LLMError, match=r"\(404\)"):
        client.chat(HELLO)


def test_unreachable_endpoint_fails_fast(tmp_path: Path) -> None:
    client = make_client(tmp_path, f"http://127.0.0.1:{closed_port()}/v1")
    started = time.monotonic()
    with pytest.raises(LLMError, match="cannot reach"):
        client.chat(HELLO)
    assert time.monotonic() - started < 3


def test_stream_retries_before_the_first_token(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url)
    fake.fail_next(503)
    assert "".join(client.stream_chat(HELLO)) == "Echo: hello there"
    assert len(fake.chat_requests()) == 2


def test_stream_is_not_retried_after_the_first_token(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url, DOCLENS_LLM_TIMEOUT="1")
    fake.hang_next(5, after_chunks=1)
    received: list[str] = []
    with pytest.raises(LLMError, match="timed out"):
        for delta in client.stream_chat(HELLO):
            received.append(delta)
    assert received  # some text arrived before the stall
    assert len(fake.chat_requests()) == 1


# ---------------------------------------------------------------- Retry-After parsing


def test_parse_retry_after_seconds_and_http_date() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("0.5") == 0.5
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    now = time.time()
    in_two_seconds = email.utils.formatdate(now + 2, usegmt=True)
    assert 1.0 <= parse_retry_after(in_two_seconds, now=now) <= 2.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


# ---------------------------------------------------------------- rate limiting


def test_limiter_is_thread_safe_and_keeps_the_total_rate() -> None:
    limiter = RateLimiter(qps=20)
    times: list[float] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(4):
            limiter.acquire()
            with lock:
                times.append(time.monotonic())

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    times.sort()
    span = times[-1] - times[0]
    assert len(times) == 24
    assert 23 / 20 * 0.9 <= span <= 2.5  # 23 intervals at 20/s; generous above for a busy machine


def test_clients_of_one_endpoint_share_the_limiter(tmp_path: Path, fake: FakeOpenAI) -> None:
    first = make_client(tmp_path / "a", fake.base_url, DOCLENS_LLM_QPS="10")
    second = make_client(tmp_path / "b", fake.base_url, DOCLENS_LLM_QPS="10")
    assert first.limiter is second.limiter

    def worker(client: LLMClient) -> None:
        for _ in range(3):
            client.chat(HELLO)

    threads = [threading.Thread(target=worker, args=(c,)) for c in (first, second, first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    times = sorted(r.time for r in fake.chat_requests())
    assert len(times) == 12
    assert times[-1] - times[0] >= 11 / 10 * 0.9  # 12 requests at 10/s across all users


def test_rate_drops_on_429_and_recovers_after_successes(tmp_path: Path, fake: FakeOpenAI) -> None:
    client = make_client(tmp_path, fake.base_url, DOCLENS_LLM_QPS="20")
    limiter = client.limiter
    assert limiter.effective_qps == 20
    fake.fail_next(429, headers={"Retry-After": "0"})
    client.chat(HELLO)
    assert limiter.effective_qps < 20
    for _ in range(6):
        client.chat(HELLO)
    assert limiter.effective_qps == 20


def test_limiter_recovery_is_additive_and_capped() -> None:
    limiter = RateLimiter(qps=10)
    limiter.on_rate_limited()
    limiter.on_rate_limited()
    assert limiter.effective_qps == 2.5
    limiter.on_success()
    assert limiter.effective_qps == 3.5
    for _ in range(20):
        limiter.on_success()
    assert limiter.effective_qps == 10


def test_fake_server_runs_as_a_process_and_is_scriptable(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys
    import urllib.request

    from tests.conftest import REPO_ROOT

    process = subprocess.Popen([sys.executable, "-m", "tests.support.fake_openai", "--port", "0"], cwd=REPO_ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip().rsplit(" ", 1)[-1]
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        root = base_url[: -len("/v1")]
        script = urllib.request.Request(f"{root}/_fake/reply", data=json.dumps({"text": "scripted"}).encode(),
                                        method="POST")
        urllib.request.urlopen(script, timeout=5).read()
        client = make_client(tmp_path, base_url)
        assert client.chat(HELLO) == "scripted"
        recorded = json.loads(urllib.request.urlopen(f"{root}/_fake/requests", timeout=5).read())
        assert [r["path"] for r in recorded] == ["/v1/chat/completions"]
        assert recorded[0]["headers"]["Authorization"] == f"Bearer {API_KEY}"
    finally:
        process.terminate()
        process.wait(timeout=5)
