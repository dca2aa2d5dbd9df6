"""A small OpenAI-compatible HTTP server for tests.

In-process::

    with FakeOpenAI() as fake:
        fake.fail_next(429, headers={"Retry-After": "1"})
        ...  # point DOCLENS_LLM_BASE_URL at fake.base_url
        assert fake.requests[-1].headers["Authorization"] == "Bearer sk-test"

As a process (the browser tests start the app as a subprocess)::

    python -m tests.support.fake_openai --port 8765

A process is scripted over HTTP: POST /_fake/fail {"status": 429, "headers": {...}, "times": 1},
POST /_fake/hang {"seconds": 5}, POST /_fake/drip {"delay": 0.5} (slow chunks),
POST /_fake/cut {"after_chunks": 2} (a stream that stops mid-way), POST /_fake/reply {"text": "..."}
(queued replies), POST /_fake/reset, GET /_fake/requests (the recorded requests as JSON).

A reply may echo a request header: ``{header:Authorization}`` in its text becomes the header's value.

Served: POST /v1/chat/completions (plain and ``stream: true`` as SSE ending in ``data: [DONE]``),
POST /v1/embeddings (deterministic vectors from a hash of each text), GET /v1/models.

What it records and replies: tests/support/fake_openai_requests.py; its HTTP side:
tests/support/fake_openai_http.py. Import every name from here.
"""

from __future__ import annotations

import argparse
import json
import logging
import threading
import time
from collections import deque
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any, Optional, Union

from tests.support.fake_openai_http import _Handler
from tests.support.fake_openai_requests import (
    DEFAULT_MODELS,
    Fault,
    RecordedRequest,
    ReplyFunction,
    RequestMatcher,
    decode_data_url,
    default_reply,
    embedding_for,
    images_in,
    translating_reply,
)

__all__ = [
    "DEFAULT_MODELS",
    "FakeOpenAI",
    "Fault",
    "RecordedRequest",
    "ReplyFunction",
    "RequestMatcher",
    "decode_data_url",
    "default_reply",
    "embedding_for",
    "images_in",
    "main",
    "translating_reply",
]


class FakeOpenAI:
    """An OpenAI-compatible server on 127.0.0.1 in a background thread."""

    def __init__(
        self,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        reply: Union[ReplyFunction, str, None] = None,
        embedding_dim: int = 16,
        models: tuple[str, ...] = DEFAULT_MODELS,
        api_key: Optional[str] = None,
        stream_chunk_chars: int = 12,
        stream_delay: float = 0.0,
    ) -> None:
        self.host = host
        self.requested_port = port
        self.reply: Union[ReplyFunction, str] = reply or default_reply
        self.embedding_dim = embedding_dim
        self.models = models
        self.api_key = api_key  # when set, other keys get 401
        self.stream_chunk_chars = stream_chunk_chars
        self.stream_delay = stream_delay
        self.finish_reason = "stop"  # "length": the model says it stopped at max_tokens
        self.requests: list[RecordedRequest] = []
        self._faults: deque[Fault] = deque()
        self._replies: deque[str] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None

    # ------------------------------------------------------------ lifecycle

    def start(self) -> FakeOpenAI:
        handler = type("FakeOpenAIHandler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer((self.host, self.requested_port), handler)
        self._server.daemon_threads = True
        self._stopping.clear()
        # A short poll interval makes stop() (and so every test teardown) fast.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes hanging handlers
        if self._server:
            self._server.shutdown()
            self._server.server_close()
        if self._thread:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if not self._server:
            raise RuntimeError("FakeOpenAI is not started")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    # ------------------------------------------------------------ scripting

    def fail_next(
        self,
        status: int,
        *,
        headers: Optional[dict[str, str]] = None,
        body: Any = None,
        times: int = 1,
        path: Optional[str] = None,
        match: Optional[RequestMatcher] = None,
    ) -> None:
        """The next ``times`` matching requests get this HTTP status (e.g. 429 with Retry-After, 500, 401).

        ``body``: JSON-able, or a str/bytes sent as is (with headers={"Content-Type": ...} for e.g. HTML).
        """
        if body is None:
            body = {"error": {"message": f"fake error {status}", "type": "fake_error", "code": str(status)}}
        self._add_fault(
            Fault(status=status, headers=dict(headers or {}), body=body, times=times, path=path, match=match)
        )

    def hang_next(
        self,
        seconds: float,
        *,
        times: int = 1,
        after_chunks: Optional[int] = None,
        path: Optional[str] = None,
        match: Optional[RequestMatcher] = None,
    ) -> None:
        """The next matching requests stall ``seconds`` (streams: after ``after_chunks`` chunks), then answer."""
        self._add_fault(Fault(hang_seconds=seconds, after_chunks=after_chunks, times=times, path=path, match=match))

    def drip_next(
        self, delay: float, *, times: int = 1, path: Optional[str] = None, match: Optional[RequestMatcher] = None
    ) -> None:
        """The next matching replies arrive slowly: ``delay`` seconds between streamed chunks, or a plain
        JSON body sent in small pieces ``delay`` apart (each gap shorter than a read timeout, the whole long)."""
        self._add_fault(Fault(chunk_delay=delay, times=times, path=path, match=match))

    def cut_next(
        self, after_chunks: int, *, times: int = 1, path: Optional[str] = None, match: Optional[RequestMatcher] = None
    ) -> None:
        """The next matching streams send ``after_chunks`` text chunks and then close the connection, with
        no finish_reason and no ``[DONE]``: a reply cut off mid-way."""
        self._add_fault(Fault(cut_after_chunks=after_chunks, times=times, path=path, match=match))

    def queue_reply(self, *texts: str) -> None:
        """Chat replies used in order before the reply function."""
        with self._lock:
            self._replies.extend(texts)

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._faults.clear()
            self._replies.clear()

    def _add_fault(self, fault: Fault) -> None:
        with self._lock:
            self._faults.append(fault)

    def take_fault(self, request: RecordedRequest) -> Optional[Fault]:
        with self._lock:
            for fault in self._faults:
                if fault.applies_to(request):
                    fault.times -= 1
                    if fault.times <= 0:
                        self._faults.remove(fault)
                    return fault
        return None

    def reply_for(self, body: dict[str, Any]) -> str:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        return self.reply if isinstance(self.reply, str) else self.reply(body)

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def wait(self, seconds: float) -> None:
        """Sleep that ends early when the server stops."""
        self._stopping.wait(seconds)

    # ------------------------------------------------------------ inspection

    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in list(self.requests) if r.is_chat]

    def vision_requests(self) -> list[RecordedRequest]:
        return [r for r in self.chat_requests() if r.is_vision]

    def last_chat(self) -> RecordedRequest:
        chats = self.chat_requests()
        if not chats:
            raise AssertionError("no chat request was received")
        return chats[-1]


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description="An OpenAI-compatible fake server for tests.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--dim", type=int, default=16, help="embedding size")
    parser.add_argument("--api-key", default=None, help="refuse other keys with 401")
    parser.add_argument("--stream-delay", type=float, default=0.0, help="seconds between streamed chunks")
    parser.add_argument(
        "--translations",
        default=None,
        metavar="FILE.json",
        help='{"question": "translation"}: the reply to each question-translation request',
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    reply = (
        translating_reply(json.loads(Path(args.translations).read_text(encoding="utf-8")))
        if args.translations
        else None
    )
    fake = FakeOpenAI(
        host=args.host,
        port=args.port,
        embedding_dim=args.dim,
        api_key=args.api_key,
        stream_delay=args.stream_delay,
        reply=reply,
    ).start()
    print(f"FakeOpenAI listening on {fake.base_url}", flush=True)  # the parent process reads this line
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        fake.stop()


if __name__ == "__main__":
    main()
