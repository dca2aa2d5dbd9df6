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

Served: POST /v1/chat/completions (plain and ``stream: true`` as SSE ending in ``data: [DONE]``),
POST /v1/embeddings (deterministic vectors from a hash of each text), GET /v1/models.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import json
import logging
import math
import re
import struct
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Optional, Union

log = logging.getLogger(__name__)

ReplyFunction = Callable[[dict[str, Any]], str]
RequestMatcher = Callable[["RecordedRequest"], bool]

DEFAULT_MODELS = ("fake-chat", "fake-vision", "fake-embedding")


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # Authorization included, so tests can check the key was sent
    body: Any  # parsed JSON, or None
    time: float = field(default_factory=time.monotonic)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []

    @property
    def is_chat(self) -> bool:
        return self.path.endswith("/chat/completions")

    @property
    def is_vision(self) -> bool:
        return bool(images_in(self))

    def text(self) -> str:
        """Every text part of every message, joined: what the model was told."""
        return "\n".join(_message_texts(self.messages))

    def header(self, name: str) -> Optional[str]:
        lowered = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == lowered), None)


@dataclass
class Fault:
    """A scripted misbehaviour for the next matching request(s)."""

    status: int = 0  # 0: no error status (a hang only)
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    hang_seconds: float = 0.0
    after_chunks: Optional[int] = None  # streaming: send this many chunks, then hang
    chunk_delay: float = 0.0  # seconds between streamed chunks, or between pieces of a plain body
    cut_after_chunks: Optional[int] = None  # streaming: this many text chunks, then close (no finish, no [DONE])
    times: int = 1
    path: Optional[str] = None  # only requests whose path contains this
    match: Optional[RequestMatcher] = None

    def applies_to(self, request: RecordedRequest) -> bool:
        if self.path and self.path not in request.path:
            return False
        return self.match(request) if self.match else True


# ---------------------------------------------------------------- helpers for tests


def images_in(request: RecordedRequest) -> list[tuple[str, bytes]]:
    """The (mime, bytes) of every data-URL image in a chat request."""
    images = []
    for message in request.messages:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            if isinstance(part, dict) and part.get("type") == "image_url":
                url = (part.get("image_url") or {}).get("url", "")
                decoded = decode_data_url(url)
                if decoded:
                    images.append(decoded)
    return images


def decode_data_url(url: str) -> Optional[tuple[str, bytes]]:
    match = re.match(r"data:([^;,]+);base64,(.*)", url, re.S)
    if not match:
        return None
    try:
        return match.group(1), base64.b64decode(match.group(2), validate=True)
    except (binascii.Error, ValueError):
        return None


def _message_texts(messages: list[dict[str, Any]]) -> list[str]:
    texts = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return texts


def default_reply(body: dict[str, Any]) -> str:
    """A useful echo: cites numbered sources, describes images, keeps LaTeX."""
    messages = body.get("messages", [])
    request = RecordedRequest("POST", "/v1/chat/completions", {}, body)
    images = images_in(request)
    last_user = next((m for m in reversed(messages) if m.get("role") == "user"), {})
    user_text = "\n".join(_message_texts([last_user]))
    if images:
        mime, data = images[0]
        return (
            f"The figure ({mime}, {len(data)} bytes) shows a curve that rises with $x^2$; the caption gives $$E=mc^2$$."
        )
    if "[1]" in user_text:
        cited = "[1][2]" if "[2]" in user_text else "[1]"
        return (
            f"According to the sources, the answer is stated in {cited}. "
            f"The key formula is $$E=mc^2$$ where $x^2$ is the square of $x$ [1]."
        )
    return "Echo: " + " ".join(user_text.split())[:200]


def translating_reply(translations: dict[str, str]) -> ReplyFunction:
    """Replies to DocLens's question-translation requests with a fixed translation (the question itself
    when it has none), and like ``default_reply`` to everything else."""

    def reply(body: dict[str, Any]) -> str:
        messages = body.get("messages", [])
        system = messages[0].get("content", "") if messages else ""
        if isinstance(system, str) and system.startswith("Translate the user's question"):
            question = "\n".join(_message_texts([messages[-1]])).strip()
            return translations.get(question, question)
        return default_reply(body)

    return reply


def embedding_for(text: str, dim: int) -> list[float]:
    """A deterministic unit vector from a hash of the text."""
    values: list[float] = []
    counter = 0
    while len(values) < dim:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        values.extend((b - 127.5) / 127.5 for b in digest)
        counter += 1
    values = values[:dim]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


# ---------------------------------------------------------------- the server


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


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAI
    protocol_version = "HTTP/1.0"  # one request per connection: simple and enough for tests

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        log.debug("fake-openai: %s", format % args)

    # ------------------------------------------------------------ routing

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        if self.path.startswith("/_fake/requests"):
            self._send_json(200, [_request_json(r) for r in list(self.fake.requests)])
            return
        request = self._record(None)
        if self._apply_fault_status(request):
            return
        if self.path.rstrip("/") == "/v1/models":
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self.fake.models]
            self._send_json(200, {"object": "list", "data": data})
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:  # noqa: N802
        body = self._read_json()
        if self.path.startswith("/_fake/"):  # scripting a process-mode server; not recorded
            self._control(body or {})
            return
        request = self._record(body)
        if self._refuse_wrong_key(request):
            return
        fault = self.fake.take_fault(request)
        if fault and fault.hang_seconds and fault.after_chunks is None:
            self.fake.wait(fault.hang_seconds)
        if fault and fault.status:
            self._send_json(fault.status, fault.body, fault.headers)
            return
        if self.path == "/v1/chat/completions":
            self._chat(body or {}, fault)
        elif self.path == "/v1/embeddings":
            self._embeddings(body or {})
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def _record(self, body: Any) -> RecordedRequest:
        # Canonical capitalisation ("Authorization") whatever case the client sent.
        headers = {"-".join(part.capitalize() for part in k.split("-")): v for k, v in self.headers.items()}
        request = RecordedRequest(self.command, self.path, headers, body)
        self.fake.record(request)
        return request

    def _apply_fault_status(self, request: RecordedRequest) -> bool:
        fault = self.fake.take_fault(request)
        if fault and fault.hang_seconds:
            self.fake.wait(fault.hang_seconds)
        if fault and fault.status:
            self._send_json(fault.status, fault.body, fault.headers)
            return True
        return False

    def _refuse_wrong_key(self, request: RecordedRequest) -> bool:
        if self.fake.api_key and request.header("Authorization") != f"Bearer {self.fake.api_key}":
            self._send_json(
                401,
                {
                    "error": {
                        "message": "Incorrect API key provided",
                        "type": "invalid_request_error",
                        "code": "invalid_api_key",
                    }
                },
            )
            return True
        return False

    # ------------------------------------------------------------ endpoints

    def _chat(self, body: dict[str, Any], fault: Optional[Fault]) -> None:
        text = self.fake.reply_for(body)
        model = body.get("model", "fake-chat")
        if body.get("stream"):
            self._stream_chat(text, model, fault)
            return
        self._send_json(
            200,
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": self.fake.finish_reason,
                    }
                ],
                "usage": {
                    "prompt_tokens": 10,
                    "completion_tokens": max(1, len(text) // 4),
                    "total_tokens": 10 + max(1, len(text) // 4),
                },
            },
            drip=fault.chunk_delay if fault else 0.0,
        )

    def _stream_chat(self, text: str, model: str, fault: Optional[Fault]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        size = max(1, self.fake.stream_chunk_chars)
        pieces = [text[i : i + size] for i in range(0, len(text), size)] or [""]
        try:
            self._send_event(_chunk(model, {"role": "assistant", "content": ""}))
            for index, piece in enumerate(pieces):
                if fault and fault.after_chunks is not None and index == fault.after_chunks:
                    self.fake.wait(fault.hang_seconds)
                if fault and fault.cut_after_chunks is not None and index == fault.cut_after_chunks:
                    return  # the connection closes here: HTTP/1.0, one request per connection
                self._send_event(_chunk(model, {"content": piece}))
                delay = (fault.chunk_delay if fault else 0.0) or self.fake.stream_delay
                if delay:
                    self.fake.wait(delay)
            self._send_event(_chunk(model, {}, finish_reason=self.fake.finish_reason))
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            log.debug("fake-openai: the client closed the stream early")

    def _send_event(self, payload: dict[str, Any]) -> None:
        self.wfile.write(b"data: " + json.dumps(payload, ensure_ascii=False).encode("utf-8") + b"\n\n")
        self.wfile.flush()

    def _embeddings(self, body: dict[str, Any]) -> None:
        inputs = body.get("input", [])
        texts = [inputs] if isinstance(inputs, str) else [str(t) for t in inputs]
        dim = int(body.get("dimensions") or self.fake.embedding_dim)
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for index, text in enumerate(texts):
            vector = embedding_for(text, dim)
            encoded: Any = base64.b64encode(struct.pack(f"<{dim}f", *vector)).decode("ascii") if as_base64 else vector
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        self._send_json(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model", "fake-embedding"),
                "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
            },
        )

    def _control(self, body: dict[str, Any]) -> None:
        action = self.path[len("/_fake/") :].strip("/")
        if action == "fail":
            self.fake.fail_next(
                int(body["status"]),
                headers=body.get("headers"),
                body=body.get("body"),
                times=int(body.get("times", 1)),
                path=body.get("path"),
            )
        elif action == "hang":
            self.fake.hang_next(
                float(body["seconds"]),
                times=int(body.get("times", 1)),
                after_chunks=body.get("after_chunks"),
                path=body.get("path"),
            )
        elif action == "drip":
            self.fake.drip_next(float(body["delay"]), times=int(body.get("times", 1)), path=body.get("path"))
        elif action == "cut":
            self.fake.cut_next(int(body["after_chunks"]), times=int(body.get("times", 1)), path=body.get("path"))
        elif action == "reply":
            self.fake.queue_reply(*([body["text"]] if isinstance(body.get("text"), str) else body.get("texts", [])))
        elif action == "reset":
            self.fake.reset()
        else:
            self._send_json(404, {"error": {"message": f"unknown control {action}"}})
            return
        self._send_json(200, {"ok": True})

    # ------------------------------------------------------------ I/O

    def _read_json(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError):
            return None

    def _send_json(
        self, status: int, payload: Any, headers: Optional[dict[str, str]] = None, drip: float = 0.0
    ) -> None:
        data = (
            payload
            if isinstance(payload, bytes)
            else (payload.encode("utf-8") if isinstance(payload, str) else json.dumps(payload).encode("utf-8"))
        )
        try:
            self.send_response(status)
            if not any(name.lower() == "content-type" for name in (headers or {})):
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            if drip:
                self._drip(data, drip)
            else:
                self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            log.debug("fake-openai: the client went away before the reply")

    def _drip(self, data: bytes, delay: float, piece: int = 8) -> None:
        for start in range(0, len(data), piece):
            self.wfile.write(data[start : start + piece])
            self.wfile.flush()
            self.fake.wait(delay)
            if self.fake._stopping.is_set():
                return


def _chunk(model: str, delta: dict[str, Any], finish_reason: Optional[str] = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


def _request_json(request: RecordedRequest) -> dict[str, Any]:
    data = asdict(request)
    data["is_vision"] = request.is_vision
    return data


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
