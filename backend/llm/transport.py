"""The one OpenAI-compatible transport: chat, vision and embeddings all go through an :class:`Endpoint`.

It builds the SDK client (the SDK's own retries off), paces every request through the endpoint's shared
:class:`RateLimiter`, retries with one policy, maps SDK errors to one-line messages and scrubs secrets:

- 429 waits as the server asks (Retry-After, capped) and slows the shared limiter down for every caller;
- 5xx, error events and dropped connections back off exponentially with jitter;
- 401/403, 404, other 4xx, timeouts and refused connections fail at once with a message the user can act on.

The API key (and the other configured secrets) never appears in a message, a reply, a log line or an
exception: error bodies and the model's replies are scrubbed of them, of bearer tokens and of ``sk-`` keys
(a streamed reply piece by piece, ``StreamScrubber``, so a key split across pieces is caught too), and
errors are raised outside ``except`` blocks so the SDK's exception (which holds the request and its
Authorization header) is not chained to ours. A reply is read up to a size limit, a stream too (``CappedBody``).
"""

from __future__ import annotations

import email.utils
import logging
import random
import re
import string
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional, Sequence, TypeVar

import httpx2
import openai

from backend.errors import one_line
from backend.llm.rate_limiter import RateLimiter, SlotTooFar, shared_limiter

log = logging.getLogger(__name__)

T = TypeVar("T")
ErrorFactory = Callable[[str, Optional[int]], Exception]

# Ollama and vLLM ignore the key, but the SDK and some proxies insist on one.
PLACEHOLDER_API_KEY = "no-key-needed"
MAX_RETRY_AFTER_SECONDS = 60.0
MAX_BACKOFF_SECONDS = 20.0


# ---------------------------------------------------------------- secrets and messages


_BEARER = re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=\-]+")
_SK_KEY = re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}")


MIN_SECRET_CHARS = 4  # a shorter "secret" would scrub ordinary words
# What a bearer token or a key is made of, and "Bearer " before one: the end of a streamed text made of
# these may be the start of a secret and is held back until more comes.
_TOKEN_CHARS = frozenset(string.ascii_letters + string.digits + "._~+/=-")
_BEARER_BEFORE = re.compile(r"(?i)bearer\s+$")
MAX_HELD_CHARS = 256  # a longer run of token characters is let through, all but its last part


def scrub(text: str, *secrets: Optional[str]) -> str:
    """Remove the given secrets and anything that looks like a bearer token or an sk- key."""
    for secret in secrets:
        if secret and len(secret) >= MIN_SECRET_CHARS:
            text = text.replace(secret, "***")
    return _SK_KEY.sub("sk-***", _BEARER.sub(r"\1***", text))


class StreamScrubber:
    """``scrub`` for a text that arrives in pieces (a streamed reply): a secret split across pieces is
    still caught, because the end of what arrived that could be the start of one is held back until the
    next piece shows what it was (or ``flush`` ends the text)."""

    def __init__(self, secrets: Sequence[str]) -> None:
        self._secrets = tuple(s for s in secrets if s and len(s) >= MIN_SECRET_CHARS)
        self._held = ""
        self._max_held = max([MAX_HELD_CHARS, *(len(s) + 16 for s in self._secrets)])

    def feed(self, piece: str) -> str:
        """The scrubbed text that is safe to pass on now."""
        text = self._held + piece
        keep = min(self._max_held, max(self._token_tail(text), self._secret_start(text)))
        cut = self._before_secrets(text, len(text) - keep)
        self._held = text[cut:]
        return scrub(text[:cut], *self._secrets)

    def flush(self) -> str:
        """The rest, at the end of the text; a key cut off at the very end is scrubbed too."""
        text, self._held = self._held, ""
        start = self._secret_start(text)
        if start >= MIN_SECRET_CHARS:
            return scrub(text[: len(text) - start], *self._secrets) + "***"
        return scrub(text, *self._secrets)

    def _before_secrets(self, text: str, cut: int) -> int:
        """``cut``, moved back to the start of a secret that would straddle it."""
        for secret in self._secrets:
            found = text.find(secret, max(0, cut - len(secret) + 1))
            if 0 <= found < cut < found + len(secret):
                cut = found
        return cut

    def _token_tail(self, text: str) -> int:
        """The length of the run of token characters ending ``text`` (with a "Bearer " before it)."""
        start, floor = len(text), max(0, len(text) - self._max_held)
        while start > floor and text[start - 1] in _TOKEN_CHARS:
            start -= 1
        bearer = _BEARER_BEFORE.search(text[max(0, start - 16) : start])
        return len(text) - start + (len(bearer.group(0)) if bearer else 0)

    def _secret_start(self, text: str) -> int:
        """The length of the longest end of ``text`` that begins one of the secrets."""
        for size in range(min(len(text), max((len(s) - 1 for s in self._secrets), default=0)), 0, -1):
            if any(s.startswith(text[-size:]) for s in self._secrets):
                return size
        return 0


def not_openai_message(base_url: str, setting: str = "llm.base_url") -> str:
    # Typically a base_url without its /v1 (or compatible-mode) path, answered by a web page.
    return (
        f"the model endpoint {base_url} did not answer like an OpenAI-compatible API; check {setting} "
        f"(it usually ends in /v1, e.g. http://localhost:11434/v1 for Ollama)"
    )


# ---------------------------------------------------------------- Retry-After


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


# ---------------------------------------------------------------- reply limits


class ReplyLimitExceeded(Exception):
    """A reply broke a size or time limit; the message completes "<the endpoint> ..."."""


def too_large(max_bytes: int) -> str:
    return f"sent a reply larger than {max_bytes // 1024} KB (does it ignore max_tokens?)"


class CappedBody(httpx2.SyncByteStream):
    """A streamed response body that stops with ReplyLimitExceeded once more than ``max_bytes`` came: the
    SDK decodes a stream as it arrives and keeps an event whole, so a body of megabytes without an event
    break would otherwise be held in memory and read to its end."""

    def __init__(self, inner: httpx2.SyncByteStream, max_bytes: int) -> None:
        self._inner = inner
        self.max_bytes = max_bytes
        self.received = 0

    def __iter__(self) -> Iterator[bytes]:
        for part in self._inner:
            self.received += len(part)
            if self.received > self.max_bytes:
                raise ReplyLimitExceeded(too_large(self.max_bytes))
            yield part

    def close(self) -> None:
        self._inner.close()


def cap_body(response: httpx2.Response, max_bytes: int) -> Optional[CappedBody]:
    """Cap the body of a response not read yet (a stream); None if it is not a synchronous stream."""
    if not isinstance(response.stream, httpx2.SyncByteStream):
        return None
    response.stream = body = CappedBody(response.stream, max_bytes)
    return body


def read_capped(response: httpx2.Response, max_bytes: int, deadline: float, timeout: float) -> bytes:
    """A reply body of at most ``max_bytes``, complete before the monotonic ``deadline``.

    Read errors become the SDK's timeout/connection errors, so they are mapped like any other."""
    parts: list[bytes] = []
    size = 0
    try:
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > max_bytes:
                raise ReplyLimitExceeded(too_large(max_bytes))
            if time.monotonic() > deadline:
                raise ReplyLimitExceeded(f"took longer than {timeout:g} s to send its reply")
            parts.append(chunk)
    except httpx2.TimeoutException:
        raise openai.APITimeoutError(request=response.request) from None
    except httpx2.RequestError as exc:
        raise openai.APIConnectionError(message=one_line(exc), request=response.request) from None
    return b"".join(parts)


# ---------------------------------------------------------------- error mapping


@dataclass
class Failure:
    message: str
    status: Optional[int]
    retryable: bool
    retry_after: Optional[float] = None


def error_detail(exc: openai.APIStatusError) -> str:
    """The provider's own one-line explanation, from the usual places in an error body."""
    body = exc.body
    if isinstance(body, dict):
        message = body.get("message") or body.get("error_msg") or body.get("msg")
        if isinstance(message, str):
            return one_line(message)
        inner = body.get("error")
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return one_line(inner["message"])
    if isinstance(body, str):
        return one_line(body)
    return ""


def _connection_reason(exc: openai.APIConnectionError) -> str:
    cause = exc.__cause__
    text = str(cause) if cause else exc.message
    if "refused" in text.lower():
        return "connection refused"
    return one_line(text or exc.__class__.__name__, 120)


# ---------------------------------------------------------------- the endpoint


class Endpoint:
    """One OpenAI-compatible endpoint as one caller uses it: the client, the shared limiter, retries.

    ``what`` names it in messages ("model endpoint", "embedding endpoint"); ``key_variable`` is where the
    user sets its key; ``error`` builds the caller's exception from a message and an HTTP status.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float,
        qps: float,
        max_retries: int,
        error: ErrorFactory,
        what: str = "model endpoint",
        key_variable: str = "DOCLENS_LLM_API_KEY",
        qps_setting: str = "llm.qps",
        backoff_base: float = 0.5,
        other_secrets: Sequence[str] = (),
    ) -> None:
        self.base_url = base_url.strip().rstrip("/")
        self.timeout = timeout
        self.qps = qps
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.where = f"the {what} {self.base_url}"
        self._api_key = api_key.strip()
        self.secrets = (self._api_key, *other_secrets)  # scrubbed from every message and every reply
        self._error = error
        self._key_variable = key_variable
        self._qps_setting = qps_setting
        self._client: Optional[openai.OpenAI] = None
        self._client_lock = threading.Lock()

    @property
    def limiter(self) -> RateLimiter:
        return shared_limiter(self.base_url, self.qps)

    def client(self) -> openai.OpenAI:
        with self._client_lock:
            if self._client is None:
                self._client = openai.OpenAI(
                    base_url=self.base_url,
                    api_key=self._api_key or PLACEHOLDER_API_KEY,
                    timeout=self.timeout,
                    max_retries=0,
                )  # retries are ours
            return self._client

    def close(self) -> None:
        """Release the HTTP connection pool (settings changed, or the app stops)."""
        with self._client_lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def scrub(self, text: str) -> str:
        return scrub(text, *self.secrets)

    def stream_scrubber(self) -> StreamScrubber:
        return StreamScrubber(self.secrets)

    def error(self, message: str, status: Optional[int] = None) -> Exception:
        return self._error(self.scrub(message), status)

    # ------------------------------------------------------------ calls and retries

    def call(
        self,
        send: Callable[[openai.OpenAI], T],
        *,
        model: str,
        timeout: Optional[float] = None,
        success_now: bool = True,
    ) -> T:
        """``send(client)`` with the endpoint's pacing and retry policy; its result, or the caller's error.

        ``success_now=False``: the caller reports the success itself (a stream succeeds once it has ended).
        """
        client = self.client()
        attempt = 0
        while True:
            self._acquire()
            failure: Optional[Failure] = None
            try:
                result = send(client)
            except (openai.APIError, ReplyLimitExceeded) as exc:
                failure = self.describe(exc, model=model, timeout=timeout or self.timeout)
            if failure is None:
                if success_now:
                    self.limiter.on_success()
                return result
            self.retry_or_raise(failure, attempt)
            attempt += 1

    def retry_or_raise(self, failure: Failure, attempt: int, *, may_retry: bool = True) -> None:
        """Wait before the next attempt, or raise the caller's error when it should not be retried."""
        if not may_retry or not failure.retryable or attempt >= self.max_retries:
            log.warning("Call to %s failed: %s", self.where, failure.message)
            raise self.error(failure.message, failure.status)
        log.info(
            "Call to %s failed (%s), retry %d/%d",
            self.where,
            failure.status or "no status",
            attempt + 1,
            self.max_retries,
        )
        delay = self._backoff(attempt) if failure.retry_after is None else failure.retry_after
        if failure.status == 429:
            # Small jitter on top so that many waiting users do not come back in the same instant;
            # the pause applies to every caller of this endpoint, the next acquire() waits for it.
            self.limiter.on_rate_limited(delay + random.uniform(0.0, 0.1 * max(delay, 0.1)))
        else:
            time.sleep(delay)

    def _acquire(self) -> None:
        try:
            self.limiter.acquire(max_wait=max(2 * self.timeout, MAX_RETRY_AFTER_SECONDS))
        except SlotTooFar as exc:
            raise self.error(
                f"{self.where} is busy: the next request slot is {exc.wait:.0f} s away "
                f"({self._qps_setting} is {self.qps:g})"
            ) from None

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with jitter: 50-100 % of base * 2^attempt, capped."""
        ceiling = min(MAX_BACKOFF_SECONDS, self.backoff_base * (2**attempt))
        return ceiling * random.uniform(0.5, 1.0)

    # ------------------------------------------------------------ error mapping

    def describe(self, exc: Exception, *, model: str, timeout: float) -> Failure:
        """Turn an SDK error into a scrubbed one-line message and a retry decision."""
        where = self.where
        if isinstance(exc, ReplyLimitExceeded):
            return Failure(f"{where} {exc}", None, retryable=False)
        if isinstance(exc, openai.APITimeoutError):
            return Failure(f"{where} timed out after {timeout:g} s", None, retryable=False)
        if isinstance(exc, openai.APIConnectionError):
            reason = _connection_reason(exc)
            # Nobody listens: fail at once. A dropped connection is worth another try.
            return Failure(
                self.scrub(f"cannot reach {where} ({reason})"), None, retryable=reason != "connection refused"
            )
        if isinstance(exc, openai.APIStatusError):
            return self._describe_status(exc, model)
        # An error event inside a stream: the server had trouble, worth another try.
        message = exc.message if isinstance(exc, openai.APIError) else str(exc)
        return Failure(self.scrub(f"{where} reported an error: {one_line(message)}"), None, retryable=True)

    def _describe_status(self, exc: openai.APIStatusError, model: str) -> Failure:
        status, where, retries = exc.status_code, self.where, self.max_retries
        detail = self.scrub(error_detail(exc))
        suffix = f": {detail}" if detail else ""
        if status in (401, 403):
            return Failure(
                f"{where} refused the API key ({status}): check {self._key_variable}{' — ' + detail if detail else ''}",
                status,
                retryable=False,
            )
        if status == 429:
            retry_after = retry_after_from_headers(exc.response.headers)
            if retry_after is not None:
                retry_after = min(retry_after, MAX_RETRY_AFTER_SECONDS)
            return Failure(
                f"{where} is rate limiting requests (429) after {retries} retries; lower "
                f"{self._qps_setting} or try again later",
                status,
                True,
                retry_after,
            )
        if status >= 500:
            return Failure(f"{where} failed with HTTP {status} after {retries} retries{suffix}", status, retryable=True)
        if status == 404:
            return Failure(f"{where} does not know model '{model}' or the path (404){suffix}", status, retryable=False)
        return Failure(f"{where} rejected the request ({status}){suffix}", status, retryable=False)
