"""The OpenAI-compatible chat client: ERNIE, Qwen, DeepSeek, vLLM, Ollama... by configuration only.

Retries are ours (the SDK's are off): 429 waits as the server asks and slows the shared limiter down,
5xx backs off exponentially, 401/403 and timeouts fail at once with a message the user can act on.
The API key never appears in a message, a log line or an exception (every text is scrubbed).
"""

from __future__ import annotations

import base64
import email.utils
import logging
import random
import re
import struct
import threading
import time
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional, TypeVar

import openai

from backend.errors import LLMError
from backend.settings import Settings

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Ollama and vLLM ignore the key, but the SDK and some proxies insist on one.
PLACEHOLDER_API_KEY = "no-key-needed"
MAX_RETRY_AFTER_SECONDS = 60.0
MAX_BACKOFF_SECONDS = 20.0
NOT_CONFIGURED_MESSAGE = "no language model is configured (set llm.base_url and llm.model)"


class LLMStatusError(LLMError):
    """An LLMError with the HTTP status the endpoint answered (None: no answer at all)."""

    def __init__(self, message: str, status: Optional[int] = None) -> None:
        super().__init__(message)
        self.status = status


# ---------------------------------------------------------------- rate limiting


class RateLimiter:
    """A thread-safe token bucket (GCRA form) whose rate drops on 429 and climbs back on success.

    ``acquire`` reserves the next free slot under the lock and sleeps outside it, so waiting threads
    are served in order at the effective rate. After a 429 the rate halves (down to a floor) and the
    bucket pauses for the Retry-After time; every success adds a tenth of the configured rate back
    (additive increase), so a burst of 429s slows the server down only for a while.
    """

    def __init__(self, qps: float, *, burst: float = 1.0) -> None:
        if qps <= 0:
            raise ValueError("qps must be positive")
        self._lock = threading.Lock()
        self._configured = float(qps)
        self._rate = float(qps)
        self._burst = max(1.0, burst)
        self._next_free = 0.0  # theoretical arrival time of the next request (monotonic clock)

    @property
    def configured_qps(self) -> float:
        return self._configured

    @property
    def effective_qps(self) -> float:
        with self._lock:
            return self._rate

    def set_configured_qps(self, qps: float) -> None:
        """Follow a settings change; a lowered effective rate stays lowered until it recovers."""
        with self._lock:
            was_full = self._rate >= self._configured
            self._configured = float(qps)
            self._rate = self._configured if was_full else min(self._rate, self._configured)

    def acquire(self, max_wait: Optional[float] = None) -> float:
        """Wait for a slot; returns the seconds waited. Raises LLMError if the wait would exceed max_wait."""
        with self._lock:
            now = time.monotonic()
            interval = 1.0 / self._rate
            slot = max(now, self._next_free - (self._burst - 1.0) * interval)
            wait = slot - now
            if max_wait is not None and wait > max_wait:
                raise LLMStatusError(f"the model endpoint is busy: the next request slot is {wait:.0f} s away "
                                     f"(llm.qps is {self._configured:g})")
            self._next_free = max(self._next_free, now) + interval
        if wait > 0:
            time.sleep(wait)
        return wait

    def on_rate_limited(self, pause_seconds: float = 0.0) -> None:
        """A 429: halve the rate and hold every caller back for ``pause_seconds``."""
        with self._lock:
            floor = self._configured / 16.0
            self._rate = max(floor, self._rate / 2.0)
            self._next_free = max(self._next_free, time.monotonic() + max(0.0, pause_seconds))
        logger.info("LLM rate limited: effective rate lowered to %.3g requests/s", self._rate)

    def on_success(self) -> None:
        with self._lock:
            if self._rate < self._configured:
                self._rate = min(self._configured, self._rate + self._configured / 10.0)


_LIMITERS: dict[str, RateLimiter] = {}
_LIMITERS_LOCK = threading.Lock()


def shared_limiter(base_url: str, qps: float) -> RateLimiter:
    """The one limiter of an endpoint, shared by every client (and so every user) of this process."""
    key = base_url.rstrip("/")
    with _LIMITERS_LOCK:
        limiter = _LIMITERS.get(key)
        if limiter is None:
            limiter = _LIMITERS[key] = RateLimiter(qps)
        elif limiter.configured_qps != qps:
            limiter.set_configured_qps(qps)
        return limiter


# ---------------------------------------------------------------- helpers


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP date. None if absent or invalid."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def retry_after_from_headers(headers: Any) -> Optional[float]:
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    return parse_retry_after(headers.get("retry-after"))


def image_data_url(image_bytes: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(image_bytes).decode('ascii')}"


def image_message(text: str, image_bytes: bytes, mime: str) -> dict[str, Any]:
    """A user message with a text part and an image part (the OpenAI vision format)."""
    return {"role": "user", "content": [
        {"type": "text", "text": text},
        {"type": "image_url", "image_url": {"url": image_data_url(image_bytes, mime)}},
    ]}


def tiny_png(size: int = 8) -> bytes:
    """A small solid red PNG, built with the standard library, for probing vision endpoints."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)  # 8-bit RGB
    rows = b"".join(b"\x00" + b"\xff\x00\x00" * size for _ in range(size))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


_SECRET_PATTERNS = (
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=\-]+"),
    re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}"),
)


def scrub(text: str, *secrets: Optional[str]) -> str:
    """Remove the given secrets and anything that looks like a bearer token or an sk- key."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    text = _SECRET_PATTERNS[0].sub(r"\1***", text)
    return _SECRET_PATTERNS[1].sub("sk-***", text)


@dataclass
class _Failure:
    message: str
    status: Optional[int]
    retryable: bool
    retry_after: Optional[float] = None


# ---------------------------------------------------------------- the client


class LLMClient:
    """Chat, streamed chat and vision calls against one OpenAI-compatible endpoint."""

    def __init__(self, settings: Settings, *, backoff_base: float = 0.5) -> None:
        self.settings = settings
        self.backoff_base = backoff_base
        self._api_key = settings.llm.api_key.get_secret_value().strip() if settings.llm.api_key else ""
        self._client: Optional[openai.OpenAI] = None
        self._client_lock = threading.Lock()

    # ------------------------------------------------------------ configuration

    @property
    def configured(self) -> bool:
        return self.settings.llm_configured

    @property
    def base_url(self) -> str:
        return self.settings.llm.base_url.rstrip("/")

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
        return shared_limiter(self.base_url, self.settings.llm.qps)

    def _openai(self) -> openai.OpenAI:
        if not self.configured:
            raise LLMStatusError(NOT_CONFIGURED_MESSAGE)
        with self._client_lock:
            if self._client is None:
                self._client = openai.OpenAI(base_url=self.base_url, api_key=self._api_key or PLACEHOLDER_API_KEY,
                                             timeout=self.timeout, max_retries=0)
            return self._client

    def close(self) -> None:
        """Release the HTTP connection pool (settings changed, or the app stops)."""
        with self._client_lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    # ------------------------------------------------------------ public calls

    def chat(self, messages: list[dict[str, Any]], **opts: Any) -> str:
        """The assistant's reply text. Options: model, temperature, max_tokens, timeout, and any SDK extra."""
        client = self._openai()
        params = self._params(messages, opts, stream=False)
        response = self._with_retries(lambda: client.chat.completions.create(**params), params)
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list):
            raise LLMStatusError(self._not_openai_message())
        content = choices[0].message.content if choices else None
        return content or ""

    def stream_chat(self, messages: list[dict[str, Any]], **opts: Any) -> Iterator[str]:
        """Text deltas as they arrive. Retries (429/5xx) happen only before the first token."""
        client = self._openai()
        params = self._params(messages, opts, stream=True)
        attempt = 0
        while True:
            stream = self._with_retries(lambda: client.chat.completions.create(**params), params)
            started = False
            chunks = 0
            failure: Optional[_Failure] = None
            try:
                for chunk in stream:
                    chunks += 1
                    delta = _delta_text(chunk)
                    if delta:
                        started = True
                        yield delta
            except openai.APIError as exc:
                failure = self._describe(exc, params)
            finally:
                stream.close()
            if failure is None and chunks == 0:
                raise LLMStatusError(self._not_openai_message())
            if failure is None:
                self.limiter.on_success()
                return
            if started or not failure.retryable or attempt >= self.settings.llm.max_retries:
                self._log_failure(failure, final=True)
                raise LLMStatusError(failure.message, failure.status)
            self._log_failure(failure, final=False)
            self._wait_before_retry(failure, attempt)
            attempt += 1

    def vision(self, prompt: str, image_bytes: bytes, mime: str, *, system: Optional[str] = None,
               **opts: Any) -> str:
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
        probe = {"max_tokens": 8, "temperature": 0.0, "timeout": min(self.timeout, 15.0)}
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

    # ------------------------------------------------------------ retries

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

    def _with_retries(self, send: Callable[[], T], params: dict[str, Any]) -> T:
        attempt = 0
        while True:
            self.limiter.acquire(max_wait=max(2 * self.timeout, MAX_RETRY_AFTER_SECONDS))
            failure: Optional[_Failure] = None
            try:
                result = send()
            except openai.APIError as exc:
                failure = self._describe(exc, params)
            if failure is None:
                if not _is_stream(result):  # a stream counts as a success once it has finished
                    self.limiter.on_success()
                return result
            # Raised outside the except block so the SDK's exception (which holds the request
            # and its Authorization header) is not chained to ours.
            if not failure.retryable or attempt >= self.settings.llm.max_retries:
                self._log_failure(failure, final=True)
                raise LLMStatusError(failure.message, failure.status)
            self._log_failure(failure, final=False)
            self._wait_before_retry(failure, attempt)
            attempt += 1

    def _wait_before_retry(self, failure: _Failure, attempt: int) -> None:
        delay = self._backoff(attempt) if failure.retry_after is None else failure.retry_after
        if failure.status == 429:
            # Small jitter on top so that many waiting users do not come back in the same instant;
            # the pause applies to every caller of this endpoint, the next acquire() waits for it.
            self.limiter.on_rate_limited(delay + random.uniform(0.0, 0.1 * max(delay, 0.1)))
        else:
            time.sleep(delay)

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with jitter: 50-100 % of base * 2^attempt, capped."""
        ceiling = min(MAX_BACKOFF_SECONDS, self.backoff_base * (2 ** attempt))
        return ceiling * random.uniform(0.5, 1.0)

    def _describe(self, exc: openai.APIError, params: dict[str, Any]) -> _Failure:
        """Turn an SDK error into a scrubbed one-line message and a retry decision."""
        model, timeout = str(params["model"]), float(params["timeout"])
        where = f"the model endpoint {self.base_url}"
        if isinstance(exc, openai.APITimeoutError):
            return _Failure(f"{where} timed out after {timeout:g} s", None, retryable=False)
        if isinstance(exc, openai.APIConnectionError):
            reason = _connection_reason(exc)
            return _Failure(self._scrub(f"cannot reach {where} ({reason})"), None, retryable=False)
        if isinstance(exc, openai.APIStatusError):
            return self._describe_status(exc, where, model)
        # An error event inside a stream: the server had trouble, worth another try.
        return _Failure(self._scrub(f"{where} reported an error: {_short(exc.message)}"), None, retryable=True)

    def _describe_status(self, exc: openai.APIStatusError, where: str, model: str) -> _Failure:
        status = exc.status_code
        detail = self._scrub(_error_detail(exc))
        if status in (401, 403):
            return _Failure(f"{where} refused the API key ({status}): check DOCLENS_LLM_API_KEY"
                            f"{' — ' + detail if detail else ''}", status, retryable=False)
        if status == 429:
            retry_after = retry_after_from_headers(exc.response.headers)
            if retry_after is not None:
                retry_after = min(retry_after, MAX_RETRY_AFTER_SECONDS)
            return _Failure(f"{where} is rate limiting requests (429) after {self.settings.llm.max_retries} "
                            f"retries; lower llm.qps or try again later", status, True, retry_after)
        if status >= 500:
            return _Failure(f"{where} failed with HTTP {status} after {self.settings.llm.max_retries} retries"
                            f"{': ' + detail if detail else ''}", status, retryable=True)
        if status == 404:
            return _Failure(f"{where} does not know model '{model}' or the path (404)"
                            f"{': ' + detail if detail else ''}", status, retryable=False)
        return _Failure(f"{where} rejected the request ({status}){': ' + detail if detail else ''}",
                        status, retryable=False)

    def _not_openai_message(self) -> str:
        # Typically a base_url without its /v1 (or compatible-mode) path, answered by a web page.
        return (f"the model endpoint {self.base_url} did not answer like an OpenAI-compatible API; check "
                f"llm.base_url (it usually ends in /v1, e.g. http://localhost:11434/v1 for Ollama)")

    def _scrub(self, text: str) -> str:
        return scrub(text, self._api_key)

    def _log_failure(self, failure: _Failure, *, final: bool) -> None:
        if final:
            logger.warning("LLM call failed: %s", failure.message)
        else:
            logger.info("LLM call failed (%s), retrying", failure.status or "no status")


def _is_stream(value: object) -> bool:
    return isinstance(value, openai.Stream)


def _delta_text(chunk: Any) -> str:
    choices = getattr(chunk, "choices", None) or []
    if not choices:
        return ""
    delta = getattr(choices[0], "delta", None)
    return (getattr(delta, "content", None) or "") if delta is not None else ""


def _error_detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        message = body.get("message") or body.get("error_msg") or body.get("msg")
        if isinstance(message, str):
            return _short(message)
        inner = body.get("error")
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return _short(inner["message"])
    if isinstance(body, str):
        return _short(body)
    return ""


def _connection_reason(exc: openai.APIConnectionError) -> str:
    cause = exc.__cause__
    text = str(cause) if cause else exc.message
    if "refused" in text.lower():
        return "connection refused"
    return _short(text or exc.__class__.__name__, 120)


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
