"""Pacing the requests to one endpoint: a shared, thread-safe rate limiter that slows down on 429 and
recovers on success and with time (used by ``backend.llm.transport``)."""

from __future__ import annotations

import logging
import threading
import time
from typing import Optional

log = logging.getLogger(__name__)

# After a 429 the effective rate halves (down to 1/16 of the configured rate); each success doubles it
# again, and without a 429 it also doubles every this many seconds, so an idle server is back at full rate.
RATE_FLOOR_FRACTION = 1.0 / 16.0
RECOVERY_DOUBLING_SECONDS = 5.0


class SlotTooFar(Exception):
    """The next request slot is further away than the caller may wait."""

    def __init__(self, wait: float) -> None:
        super().__init__(f"the next request slot is {wait:.0f} s away")
        self.wait = wait


class RateLimiter:
    """A thread-safe token bucket (GCRA form) whose rate drops on 429 and recovers on success and with time.

    ``acquire`` reserves the next free slot under the lock and sleeps outside it, so waiting threads are
    served in order at the effective rate. A 429 halves the rate (down to a floor) and pauses every caller
    for the Retry-After time. A success doubles the rate again and moves the next free slot up to the new
    rate (a slot reserved at the floor rate would otherwise keep the next request waiting); without a 429
    the rate also doubles every ``recovery_seconds``, so later, unrelated requests find the configured rate.
    """

    def __init__(self, qps: float, *, burst: float = 1.0, recovery_seconds: float = RECOVERY_DOUBLING_SECONDS) -> None:
        if qps <= 0:
            raise ValueError("qps must be positive")
        self._lock = threading.Lock()
        self._configured = float(qps)
        self._rate = float(qps)
        self._burst = max(1.0, burst)
        self._recovery_seconds = recovery_seconds
        now = time.monotonic()
        self._next_free = 0.0  # theoretical arrival time of the next request (monotonic clock)
        self._last_slot = 0.0
        self._paused_until = 0.0
        self._recovered_at = now  # when the time-based recovery was last applied

    @property
    def configured_qps(self) -> float:
        return self._configured

    @property
    def effective_qps(self) -> float:
        with self._lock:
            self._recover(time.monotonic())
            return self._rate

    def set_configured_qps(self, qps: float) -> None:
        """Follow a settings change; a lowered effective rate stays lowered until it recovers."""
        with self._lock:
            was_full = self._rate >= self._configured
            self._configured = float(qps)
            self._rate = self._configured if was_full else min(self._rate, self._configured)

    def acquire(self, max_wait: Optional[float] = None) -> float:
        """Wait for a slot; returns the seconds waited. Raises SlotTooFar if the wait would exceed max_wait."""
        with self._lock:
            now = time.monotonic()
            self._recover(now)
            interval = 1.0 / self._rate
            slot = max(now, self._next_free - (self._burst - 1.0) * interval)
            wait = slot - now
            if max_wait is not None and wait > max_wait:
                raise SlotTooFar(wait)
            self._last_slot = slot
            self._next_free = max(self._next_free, now) + interval
        if wait > 0:
            time.sleep(wait)
        return wait

    def on_rate_limited(self, pause_seconds: float = 0.0) -> None:
        """A 429: halve the rate and hold every caller back for ``pause_seconds``."""
        with self._lock:
            now = time.monotonic()
            self._recover(now)
            self._rate = max(self._configured * RATE_FLOOR_FRACTION, self._rate / 2.0)
            self._paused_until = max(self._paused_until, now + max(0.0, pause_seconds))
            self._next_free = max(self._next_free, self._paused_until)
            self._recovered_at = max(self._recovered_at, self._paused_until)  # no recovery while paused
            rate = self._rate
        log.info("Rate limited: effective rate lowered to %.3g requests/s", rate)

    def on_success(self) -> None:
        with self._lock:
            if self._rate >= self._configured:
                return
            self._rate = min(self._configured, self._rate * 2.0)
            sooner = max(self._last_slot + 1.0 / self._rate, self._paused_until)
            self._next_free = min(self._next_free, sooner)

    def _recover(self, now: float) -> None:
        """Time-based recovery (the caller holds the lock)."""
        if now <= self._recovered_at:
            return
        if self._rate < self._configured:
            doublings = (now - self._recovered_at) / self._recovery_seconds
            self._rate = min(self._configured, self._rate * 2.0**doublings)
        self._recovered_at = now


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
