"""The model bench-load talks to: a small OpenAI-compatible chat server on 127.0.0.1 that streams a fixed
answer a few words at a time, as a real model does, and counts what it was asked.

No model is reachable here, and a real one would measure the model, not DocLens: this one costs a fixed
time per answer (``first_token_s`` before its first word, ``token_s`` per word after) and no CPU.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

log = logging.getLogger(__name__)

MODEL = "bench-load-model"
ANSWER = "The passages say so [1]; the second one adds the date and the place [2]."


class LoadModelServer:
    """Start with ``start()``; ``base_url`` is what DocLens is configured with; ``stop()`` at the end."""

    def __init__(self, first_token_s: float = 0.3, token_s: float = 0.03) -> None:
        self.first_token_s = first_token_s
        self.token_s = token_s
        self.questions: list[str] = []  # the last user message of every chat request, in arrival order
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="bench-load-model", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> LoadModelServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def record(self, body: dict[str, Any]) -> None:
        messages = body.get("messages") or [{}]
        content = messages[-1].get("content", "")
        with self._lock:
            self.questions.append(content if isinstance(content, str) else json.dumps(content)[:200])


def _handler_for(server: LoadModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            log.debug("bench-load model: %s", format % args)

        def do_GET(self) -> None:  # noqa: N802 - http.server naming
            models = {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "bench"}]}
            self._json(models)

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            server.record(body)
            if body.get("stream"):
                self._stream()
            else:
                time.sleep(server.first_token_s)
                self._json(_completion(ANSWER))

        def _json(self, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            time.sleep(server.first_token_s)
            for k, word in enumerate(ANSWER.split(" ")):
                if k:
                    time.sleep(server.token_s)
                self._event(_chunk(word if not k else " " + word))
            self._event(_chunk("", finish="stop"))
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

        def _event(self, payload: dict[str, Any]) -> None:
            self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
            self.wfile.flush()

    return Handler


def _chunk(text: str, finish: str | None = None) -> dict[str, Any]:
    delta = {"content": text} if text else {}
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "bench", "object": "chat.completion.chunk", "created": 0, "model": MODEL, "choices": [choice]}


def _completion(text: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": text}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    return {
        "id": "bench",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [choice],
        "usage": usage,
    }
