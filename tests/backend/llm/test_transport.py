"""The one OpenAI-compatible transport (pacing, retries, error mapping, scrubbing) against the recording
fake server on 127.0.0.1; chat, vision and embeddings all use it, so it is tested here once."""

from __future__ import annotations

import email.utils
import json
import logging
import socket
import threading
import time
from pathlib import Path
from typing import Iterator, Optional

import openai
import pytest

from backend.errors import one_line
from backend.llm.client import LLMClient
from backend.llm.transport import PLACEHOLDER_API_KEY, Endpoint, RateLimiter, parse_retry_after, scrub, shared_limiter
from backend.processes import free_port
from tests.conftest import make_settings
from tests.support.fake_openai import FakeOpenAI

API_KEY = "sk-test-secret-0123456789"
HELLO = [{"role": "user", "content": "hello there"}]


class EndpointFailed(Exception):
    def __init__(self, message: str, status: Optional[int] = None) -> None:
        super().__init__(message)
        self.status = status


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def make_endpoint(
    base_url: str, *, api_key: str = API_KEY, timeout: float = 5.0, qps: float = 50.0, max_retries: int = 4
) -> Endpoint:
    return Endpoint(
        base_url, api_key, timeout=timeout, qps=qps, max_retries=max_retries, error=EndpointFailed, backoff_base=0.2
    )


def chat(client: openai.OpenAI) -> str:
    reply = client.chat.completions.create(model="fake-chat", messages=HELLO)  # type: ignore[arg-type]
    return reply.choices[0].message.content or ""


def call(endpoint: Endpoint) -> str:
    return endpoint.call(chat, model="fake-chat")


# ---------------------------------------------------------------- the client


def test_the_key_or_a_placeholder_is_sent(fake: FakeOpenAI) -> None:
    assert call(make_endpoint(fake.base_url)) == "Echo: hello there"
    assert fake.last_chat().headers["Authorization"] == f"Bearer {API_KEY}"
    call(make_endpoint(fake.base_url, api_key=""))
    assert fake.last_chat().headers["Authorization"] == f"Bearer {PLACEHOLDER_API_KEY}"


# ---------------------------------------------------------------- retries and failures


def test_429_with_retry_after_waits_then_succeeds(fake: FakeOpenAI) -> None:
    fake.fail_next(429, headers={"Retry-After": "1"})
    started = time.monotonic()
    assert call(make_endpoint(fake.base_url)) == "Echo: hello there"
    assert time.monotonic() - started >= 0.95
    first, second = fake.chat_requests()
    assert second.time - first.time >= 0.95


def test_500_is_retried_and_repeated_500_gives_up_after_max_retries(fake: FakeOpenAI) -> None:
    fake.fail_next(500)
    assert call(make_endpoint(fake.base_url)) == "Echo: hello there"
    assert len(fake.chat_requests()) == 2
    fake.reset()
    fake.fail_next(500, times=10)
    with pytest.raises(EndpointFailed) as caught:
        call(make_endpoint(fake.base_url, max_retries=2))
    assert len(fake.chat_requests()) == 3  # the first try and two retries
    assert "500" in str(caught.value) and fake.base_url in str(caught.value)


def test_hang_past_timeout_fails_quickly_with_clear_message(fake: FakeOpenAI) -> None:
    fake.hang_next(10)
    started = time.monotonic()
    with pytest.raises(EndpointFailed, match=r"timed out after 1 s"):
        call(make_endpoint(fake.base_url, timeout=1))
    assert time.monotonic() - started < 3
    assert len(fake.chat_requests()) == 1


def test_401_is_not_retried_and_never_shows_the_key(fake: FakeOpenAI, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="backend")
    # Some providers echo the key back in the error; it must not reach the user or the logs.
    fake.fail_next(401, body={"error": {"message": f"Incorrect API key provided: {API_KEY}"}})
    with pytest.raises(EndpointFailed) as caught:
        call(make_endpoint(fake.base_url))
    message = str(caught.value)
    assert f"the model endpoint {fake.base_url} refused the API key (401)" in message
    assert caught.value.status == 401
    assert API_KEY not in message and caught.value.__context__ is None and caught.value.__cause__ is None
    assert API_KEY not in caplog.text
    assert len(fake.chat_requests()) == 1


def test_error_bodies_with_bearer_tokens_and_sk_keys_are_scrubbed(fake: FakeOpenAI) -> None:
    fake.fail_next(403, body={"error": {"message": "forbidden"}})
    with pytest.raises(EndpointFailed, match=r"refused the API key \(403\)"):
        call(make_endpoint(fake.base_url, max_retries=0))
    other_key = "sk-someone-elses-key-987654"
    fake.fail_next(
        500, body={"error": {"message": f"upstream said Authorization: Bearer {API_KEY}; also tried {other_key}"}}
    )
    with pytest.raises(EndpointFailed) as caught:
        call(make_endpoint(fake.base_url, max_retries=0))
    assert API_KEY not in str(caught.value) and other_key not in str(caught.value)
    assert scrub(f"key {API_KEY} and Bearer abc.def", API_KEY) == "key *** and Bearer ***"
    assert scrub("a sk-abcdef123456 key") == "a sk-*** key"


def test_a_base_url_without_v1_gets_a_404_message(fake: FakeOpenAI) -> None:
    with pytest.raises(EndpointFailed, match=r"does not know model 'fake-chat' or the path \(404\)"):
        call(make_endpoint(fake.base_url[: -len("/v1")]))


def test_a_refused_connection_fails_fast(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(EndpointFailed, match=r"cannot reach .* \(connection refused\)"):
        call(make_endpoint(f"http://127.0.0.1:{free_port()}/v1"))
    assert time.monotonic() - started < 3


def test_a_dropped_connection_is_retried() -> None:
    """A server that accepts and closes without answering once, then answers: one retry, then the reply."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    port = listener.getsockname()[1]
    body = json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "fake-chat",
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "after a retry"}}
            ],
        }
    ).encode()

    def drop_once_then_answer() -> None:
        first, _ = listener.accept()
        first.close()
        second, _ = listener.accept()
        with second:
            second.settimeout(5)
            request = b""
            while b"\r\n\r\n" not in request:
                request += second.recv(65536)
            head = f"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            second.sendall(head.encode() + body)

    thread = threading.Thread(target=drop_once_then_answer, daemon=True)
    thread.start()
    try:
        assert call(make_endpoint(f"http://127.0.0.1:{port}/v1")) == "after a retry"
    finally:
        thread.join(timeout=5)
        listener.close()


def test_one_line_shortens_messages_and_exceptions() -> None:
    assert one_line("a\n  b\tc") == "a b c"
    assert one_line(ValueError("x" * 300), 20) == "x" * 19 + "…"
    assert one_line(RuntimeError()) == "RuntimeError"


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


def test_callers_of_one_endpoint_share_the_limiter(tmp_path: Path, fake: FakeOpenAI) -> None:
    first = make_endpoint(fake.base_url, qps=10)
    second = make_endpoint(fake.base_url + "/", qps=10)
    assert first.limiter is second.limiter is shared_limiter(fake.base_url, 10)

    def worker(endpoint: Endpoint) -> None:
        for _ in range(3):
            call(endpoint)

    threads = [threading.Thread(target=worker, args=(e,)) for e in (first, second, first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    times = sorted(r.time for r in fake.chat_requests())
    assert len(times) == 12
    assert times[-1] - times[0] >= 11 / 10 * 0.9  # 12 requests at 10/s across all users


def test_after_a_burst_of_429s_the_shared_rate_recovers_once_requests_succeed(tmp_path: Path, fake: FakeOpenAI) -> None:
    """Issue 11 item 11: four 429s in a row take the rate to its floor (1/16); the requests that then
    succeed bring it back to the configured rate, and later questions are paced at that rate again."""
    settings = make_settings(
        tmp_path / "data",
        DOCLENS_LLM_BASE_URL=fake.base_url,
        DOCLENS_LLM_MODEL="fake-chat",
        DOCLENS_LLM_QPS="10",
        DOCLENS_LLM_TIMEOUT="5",
    )
    client = LLMClient(settings, backoff_base=0.2)
    fake.fail_next(429, headers={"Retry-After": "0"}, times=4)
    client.chat(HELLO)  # four 429s, then an answer
    assert len(fake.chat_requests()) == 5
    for _ in range(3):
        client.chat(HELLO)
    assert client.limiter.effective_qps == pytest.approx(10)
    fake.reset()
    for _ in range(4):  # an unrelated later question or two
        client.chat(HELLO)
    times = [r.time for r in fake.chat_requests()]
    gaps = [later - earlier for earlier, later in zip(times, times[1:])]
    assert max(gaps) < 0.4, gaps  # 0.1 s apart at 10/s (at the floor they were 1.6 s apart)


def test_limiter_halves_on_429_doubles_on_success_and_recovers_with_time() -> None:
    limiter = RateLimiter(qps=10, recovery_seconds=3600)
    limiter.on_rate_limited()
    limiter.on_rate_limited()
    # it recovers with time from the first call: a busy machine's pause adds a millionth or so
    assert limiter.effective_qps == pytest.approx(2.5, rel=1e-3)
    limiter.on_success()
    assert limiter.effective_qps == pytest.approx(5, rel=1e-3)
    for _ in range(5):
        limiter.on_success()
    assert limiter.effective_qps == 10  # capped at the configured rate
    for _ in range(10):
        limiter.on_rate_limited()
    assert limiter.effective_qps == pytest.approx(10 / 16)  # the floor
    idle = RateLimiter(qps=10, recovery_seconds=0.05)
    for _ in range(4):
        idle.on_rate_limited()
    time.sleep(0.3)  # 6 doublings' worth of quiet
    assert idle.effective_qps == 10


def test_a_success_moves_a_slot_reserved_at_the_floor_rate_up() -> None:
    limiter = RateLimiter(qps=10, recovery_seconds=3600)
    for _ in range(4):
        limiter.on_rate_limited()  # 0.625/s: the next slot would be 1.6 s after this one
    limiter.acquire()
    for _ in range(4):
        limiter.on_success()
    assert limiter.acquire() < 0.2


def test_a_pause_asked_by_the_server_is_kept_by_every_caller() -> None:
    limiter = RateLimiter(qps=50)
    limiter.on_rate_limited(pause_seconds=0.5)
    limiter.on_success()  # a success elsewhere does not cut the server's pause short
    started = time.monotonic()
    limiter.acquire()
    assert time.monotonic() - started >= 0.45
