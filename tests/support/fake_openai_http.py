"""The HTTP side of the fake OpenAI server (tests/support/fake_openai.py): routing, the endpoints, the
``/_fake/`` controls and the (slow, cut or failing) replies.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import struct
import time
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any, Optional

from tests.support.fake_openai_requests import Fault, RecordedRequest, embedding_for

if TYPE_CHECKING:
    from tests.support.fake_openai import FakeOpenAI


log = logging.getLogger(__name__)


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
            self._chat(body or {}, fault, request)
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

    def _chat(self, body: dict[str, Any], fault: Optional[Fault], request: RecordedRequest) -> None:
        text = _echo_headers(self.fake.reply_for(body), request)
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


def _echo_headers(text: str, request: RecordedRequest) -> str:
    """``{header:Authorization}`` in a reply becomes that request header's value: an endpoint that
    echoes what it was sent."""
    return re.sub(r"\{header:([A-Za-z0-9-]+)\}", lambda m: request.header(m.group(1)) or "", text)


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
