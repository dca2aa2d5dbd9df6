"""The OpenAI-compatible chat client: ERNIE, Qwen, DeepSeek, vLLM, Ollama... by configuration only.

Transport, pacing, retries and error messages are ``backend.llm.transport``'s. What is the chat
client's: replies are bounded, because an endpoint that ignores ``max_tokens`` must not hold the server.
A plain reply is read up to a size derived from ``max_tokens`` and must be complete within
``llm.timeout``; a stream stops at the same deadline and at a character limit. A stream that ends
early (deadline, size, ``max_tokens``, or a connection closed before the model said it had finished)
raises :class:`LLMCutOff` after the text it sent, so the answer can be marked as cut off; so does a stream
that stops sending (or fails) after its first text: only a stream with no text yet fails. Every reply is
scrubbed of the configured secrets (a stream piece by piece) before anyone sees it.
"""

from __future__ import annotations

import base64
import json
import logging
import struct
import time
import zlib
from dataclasses import dataclass
from typing import Any, Iterator, Optional

import openai

from backend.errors import LLMError
from backend.llm.rate_limiter import RateLimiter
from backend.llm.transport import (
    CappedBody,
    Endpoint,
    Failure,
    ReplyLimitExceeded,
    StreamScrubber,
    cap_body,
    not_openai_message,
    read_capped,
    too_large,
)
from backend.settings import Settings

log = logging.getLogger(__name__)

NOT_CONFIGURED_MESSAGE = "no language model is configured (set llm.base_url and llm.model)"
CLOSED_EARLY = "the connection closed before the model finished"
# A token is a few characters; these bounds are generous for any tokenizer and any JSON escaping, and
# still stop a reply of megabytes from an endpoint that ignores max_tokens.
REPLY_BASE_BYTES = 64 * 1024
REPLY_BYTES_PER_TOKEN = 128
STREAM_BASE_CHARS = 4096
STREAM_CHARS_PER_TOKEN = 16
STREAM_BASE_BYTES = 256 * 1024  # the events around the text: a few hundred bytes each
STREAM_BYTES_PER_TOKEN = 512


class LLMStatusError(LLMError):
    """An LLMError with the HTTP status the endpoint answered (None: no answer at all)."""

    def __init__(self, message: str, status: Optional[int] = None) -> None:
        super().__init__(message)
        self.status = status


class LLMCutOff(LLMStatusError):
    """A streamed reply ended before it was complete; the text already yielded is all there is."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"the reply from {where} was cut off: {reason}")
        self.reason = reason


def reply_byte_limit(max_tokens: int) -> int:
    """The largest plain (JSON) reply read for a request of ``max_tokens``."""
    return REPLY_BASE_BYTES + REPLY_BYTES_PER_TOKEN * max(1, max_tokens)


def stream_char_limit(max_tokens: int) -> int:
    """The most characters of text taken from a stream for a request of ``max_tokens``."""
    return STREAM_BASE_CHARS + STREAM_CHARS_PER_TOKEN * max(1, max_tokens)


def stream_byte_limit(max_tokens: int) -> int:
    """The most bytes of a stream (events included) read for a request of ``max_tokens``."""
    return STREAM_BASE_BYTES + STREAM_BYTES_PER_TOKEN * max(1, max_tokens)


def configured_secrets(settings: Settings) -> tuple[str, ...]:
    """Every secret of the settings but the logins: none may come back through a model's reply."""
    fields = (settings.llm.api_key, settings.embedding.api_key, settings.milvus.token, settings.ocr.api_token)
    return tuple(secret.get_secret_value() for secret in fields if secret is not None)


# ---------------------------------------------------------------- images


def image_data_url(image_bytes: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(image_bytes).decode('ascii')}"


def image_message(text: str, image_bytes: bytes, mime: str) -> dict[str, Any]:
    """A user message with a text part and an image part (the OpenAI vision format)."""
    return {
        "role": "user",
        "content": [
            {"type": "text", "text": text},
            {"type": "image_url", "image_url": {"url": image_data_url(image_bytes, mime)}},
        ],
    }


def tiny_png(size: int = 8) -> bytes:
    """A small solid red PNG, built with the standard library, for probing vision endpoints."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)  # 8-bit RGB
    rows = b"".join(b"\x00" + b"\xff\x00\x00" * size for _ in range(size))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


# ---------------------------------------------------------------- the client


@dataclass
class _StreamState:
    """What one streamed attempt delivered."""

    char_limit: int
    timeout: float
    started_at: float = 0.0
    chunks: int = 0
    chars: int = 0
    finish_reason: Optional[str] = None
    cut: str = ""  # why we stopped reading early
    error: Optional[Exception] = None  # an openai.APIError, or ReplyLimitExceeded
    body: Optional[CappedBody] = None

    @property
    def started(self) -> bool:
        return self.chars > 0

    @property
    def deadline(self) -> float:
        return self.started_at + self.timeout


class LLMClient:
    """Chat, streamed chat and vision calls against one OpenAI-compatible endpoint."""

    def __init__(self, settings: Settings, *, backoff_base: float = 0.5) -> None:
        self.settings = settings
        llm = settings.llm
        api_key = llm.api_key.get_secret_value() if llm.api_key else ""
        self.endpoint = Endpoint(
            llm.base_url,
            api_key,
            timeout=llm.timeout,
            qps=llm.qps,
            max_retries=llm.max_retries,
            error=LLMStatusError,
            backoff_base=backoff_base,
            other_secrets=configured_secrets(settings),
        )

    # ------------------------------------------------------------ configuration

    @property
    def configured(self) -> bool:
        return self.settings.llm_configured

    @property
    def base_url(self) -> str:
        return self.endpoint.base_url

    @property
    def model(self) -> str:
        return self.settings.llm.model

    @property
    def vision_model(self) -> str:
        return self.settings.vision_model

    @property
    def timeout(self) -> float:
        return self.settings.llm.timeout

    @property
    def limiter(self) -> RateLimiter:
        return self.endpoint.limiter

    def close(self) -> None:
        """Release the HTTP connection pool (settings changed, or the app stops)."""
        self.endpoint.close()

    def _ready_endpoint(self) -> Endpoint:
        if not self.configured:
            raise LLMStatusError(NOT_CONFIGURED_MESSAGE)
        return self.endpoint

    # ------------------------------------------------------------ public calls

    def chat(self, messages: list[dict[str, Any]], **opts: Any) -> str:
        """The assistant's reply text. Options: model, temperature, max_tokens, timeout, and any SDK extra."""
        endpoint = self._ready_endpoint()
        params = self._params(messages, opts, stream=False)
        timeout = float(params["timeout"])
        max_bytes = reply_byte_limit(int(params["max_tokens"]))

        def send(client: openai.OpenAI) -> bytes:
            deadline = time.monotonic() + timeout
            with client.chat.completions.with_streaming_response.create(**params) as response:
                return read_capped(response.http_response, max_bytes, deadline, timeout)

        return self._reply_text(endpoint.call(send, model=str(params["model"]), timeout=timeout))

    def stream_chat(self, messages: list[dict[str, Any]], **opts: Any) -> Iterator[str]:
        """Text deltas as they arrive. Retries (429/5xx) happen only before the first token; a reply that
        stops early raises LLMCutOff after its text."""
        endpoint = self._ready_endpoint()
        params = self._params(messages, opts, stream=True)
        model, timeout, max_tokens = str(params["model"]), float(params["timeout"]), int(params["max_tokens"])
        attempt = 0
        while True:
            state = _StreamState(stream_char_limit(max_tokens), timeout)

            def send(client: openai.OpenAI) -> Any:
                state.started_at = time.monotonic()  # noqa: B023 - called in this iteration only
                stream = client.chat.completions.create(**params)
                state.body = cap_body(stream.response, stream_byte_limit(max_tokens))  # noqa: B023
                return stream

            stream = endpoint.call(send, model=model, timeout=timeout, success_now=False)
            yield from _scrubbed(_deltas(stream, state), endpoint.stream_scrubber(), stream)
            failure = self._stream_failure(state, model, max_tokens)
            if failure is None:
                endpoint.limiter.on_success()
                self._raise_if_cut_off(state, max_tokens)
                return
            endpoint.retry_or_raise(failure, attempt)
            attempt += 1

    def vision(self, prompt: str, image_bytes: bytes, mime: str, *, system: Optional[str] = None, **opts: Any) -> str:
        """Ask the vision model about one image (sent as a data URL with its MIME type)."""
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        messages.append(image_message(prompt, image_bytes, mime))
        opts.setdefault("model", self.vision_model)
        return self.chat(messages, **opts)

    def check_connection(self, vision: bool = False) -> tuple[bool, str]:
        """For the Settings tab: a one-line verdict on the endpoint, the key and the (vision) model."""
        if not self.configured:
            return False, "No model configured: set llm.base_url and llm.model (answers are extractive until then)."
        model = self.vision_model if vision else self.model
        probe: dict[str, Any] = {"max_tokens": 8, "temperature": 0.0, "timeout": min(self.timeout, 15.0)}
        started = time.monotonic()
        try:
            if vision:
                self.vision("What colour is this image? One word.", tiny_png(), "image/png", **probe)
            else:
                self.chat([{"role": "user", "content": "ping"}], **probe)
        except LLMError as exc:
            hint = " (the model may not accept images)" if vision and getattr(exc, "status", None) == 400 else ""
            return False, f"{exc}{hint}"
        elapsed_ms = (time.monotonic() - started) * 1000
        kind = "vision model" if vision else "model"
        return True, f"Connected to {self.base_url}: {kind} {model} answered in {elapsed_ms:.0f} ms."

    # ------------------------------------------------------------ helpers

    def _params(self, messages: list[dict[str, Any]], opts: dict[str, Any], *, stream: bool) -> dict[str, Any]:
        params = dict(opts)
        params.setdefault("model", self.model)
        params.setdefault("temperature", self.settings.llm.temperature)
        params.setdefault("max_tokens", self.settings.llm.max_tokens)
        params.setdefault("timeout", self.timeout)
        params["messages"] = messages
        if stream:
            params["stream"] = True
        return params

    def _reply_text(self, raw: bytes) -> str:
        """The message text of a chat.completion body."""
        try:
            body = json.loads(raw)
        except (UnicodeDecodeError, ValueError):
            body = None
        choices = body.get("choices") if isinstance(body, dict) else None
        if not isinstance(choices, list):
            error = body.get("error") if isinstance(body, dict) else None
            if isinstance(error, dict) and isinstance(error.get("message"), str):  # an error sent with 200
                raise self.endpoint.error(f"{self.endpoint.where} reported an error: {error['message']}")
            raise LLMStatusError(not_openai_message(self.base_url))
        message = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        return self.endpoint.scrub(content) if isinstance(content, str) else ""

    def _stream_failure(self, state: _StreamState, model: str, max_tokens: int) -> Optional[Failure]:
        """Why this attempt failed as a whole (None: it delivered, perhaps cut off). Once text arrived a
        failure only cuts the reply off: the text is kept."""
        where = self.endpoint.where
        if state.started:
            if state.error is not None:
                state.cut = self._cut_reason(state.error, model)
            return None
        if state.error is not None:
            return self.endpoint.describe(state.error, model=model, timeout=state.timeout)
        if state.finish_reason is not None:
            return None
        if state.cut:  # the deadline passed before any text
            return Failure(f"{where} timed out after {state.timeout:g} s", None, retryable=False)
        plain_limit = reply_byte_limit(max_tokens)
        if state.body is not None and state.body.received > plain_limit:  # a plain reply, and a huge one
            return Failure(f"{where} {too_large(plain_limit)}", None, retryable=False)
        if state.chunks == 0:
            return Failure(not_openai_message(self.base_url), None, retryable=False)
        return Failure(f"{where} closed the stream before the reply began", None, retryable=True)

    def _cut_reason(self, error: Exception, model: str) -> str:
        """Why a stream that had begun stopped early, as the end of "the reply ... was cut off: ..."."""
        if isinstance(error, openai.APITimeoutError):
            return f"nothing more arrived within {self.timeout:g} s (llm.timeout)"
        if isinstance(error, openai.APIConnectionError):
            return CLOSED_EARLY
        if isinstance(error, ReplyLimitExceeded):
            return f"it {error}"
        return self.endpoint.describe(error, model=model, timeout=self.timeout).message

    def _raise_if_cut_off(self, state: _StreamState, max_tokens: int) -> None:
        reason = state.cut
        if not reason and state.finish_reason is None:
            reason = CLOSED_EARLY
        elif not reason and state.finish_reason == "length":
            reason = f"it reached the {max_tokens}-token limit (llm.max_tokens)"
        if reason:
            log.warning(
                "Streamed reply from %s cut off after %d characters: %s", self.endpoint.where, state.chars, reason
            )
            raise LLMCutOff(self.endpoint.where, reason)


def _scrubbed(deltas: Iterator[str], scrubber: StreamScrubber, stream: Any) -> Iterator[str]:
    """The deltas without secrets (a delta may come out a word later); the stream is closed at the end."""
    try:
        for delta in deltas:
            clean = scrubber.feed(delta)
            if clean:
                yield clean
    finally:
        stream.close()
    rest = scrubber.flush()
    if rest:
        yield rest


def _deltas(stream: Any, state: _StreamState) -> Iterator[str]:
    """The stream's text, up to the state's character limit and deadline; errors are kept in the state."""
    try:
        for chunk in stream:
            state.chunks += 1
            delta = _delta_text(chunk)
            room = state.char_limit - state.chars
            if len(delta) > room:
                delta = delta[:room]
                state.cut = f"it passed {state.char_limit} characters"
            if delta:
                state.chars += len(delta)
                yield delta
            state.finish_reason = _finish_reason(chunk) or state.finish_reason
            if state.cut or state.finish_reason:
                return
            if time.monotonic() > state.deadline:
                state.cut = f"it took longer than {state.timeout:g} s (llm.timeout)"
                return
    except (openai.APIError, ReplyLimitExceeded) as exc:
        state.error = exc


def _delta_text(chunk: Any) -> str:
    choices = getattr(chunk, "choices", None) or []
    if not choices:
        return ""
    delta = getattr(choices[0], "delta", None)
    return (getattr(delta, "content", None) or "") if delta is not None else ""


def _finish_reason(chunk: Any) -> Optional[str]:
    choices = getattr(chunk, "choices", None) or []
    return getattr(choices[0], "finish_reason", None) if choices else None
