"""The chat clients of one server: the server's own, and one per session model profile (newest kept)."""

from __future__ import annotations

import hashlib
import threading
from typing import TYPE_CHECKING, Optional

from backend.settings import LLMSettings, Settings

if TYPE_CHECKING:
    from backend.llm.client import LLMClient

MAX_SESSION_LLMS = 32  # clients kept for per-session model profiles; the oldest is closed beyond this


class LLMClients:
    """Made on first use (``backend.llm.client`` imports the OpenAI SDK); ``reset`` closes them all."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._server: Optional[LLMClient] = None
        self._sessions: dict[tuple, LLMClient] = {}  # per-session profiles, newest last
        self._lock = threading.Lock()

    def server(self) -> LLMClient:
        from backend.llm.client import LLMClient

        with self._lock:
            if self._server is None:
                self._server = LLMClient(self._settings)
            return self._server

    def for_profile(self, profile: Optional[LLMSettings]) -> LLMClient:
        """The client for one session's own model profile (endpoint, model, key), or the server's (None).

        A profile only ever talks to its own base URL with its own key; the UI builds it (Settings tab)
        and passes it with each call, so one user's choice never changes another's.
        """
        if profile is None:
            return self.server()
        from backend.llm.client import LLMClient

        secret = profile.api_key.get_secret_value() if profile.api_key else ""
        key = tuple(profile.model_dump(mode="json").items()) + (hashlib.sha256(secret.encode()).hexdigest(),)
        with self._lock:
            client = self._sessions.pop(key, None) or LLMClient(self._settings.model_copy(update={"llm": profile}))
            self._sessions[key] = client
            evicted = list(self._sessions)[:-MAX_SESSION_LLMS]
            old = [self._sessions.pop(k) for k in evicted]
        for stale in old:
            stale.close()
        return client

    def reset(self, settings: Settings) -> None:
        """New settings: every client is closed and made again on next use."""
        with self._lock:
            self._settings = settings
            clients = [self._server, *self._sessions.values()]
            self._server, self._sessions = None, {}
        for client in clients:
            if client is not None:
                client.close()

    def close(self) -> None:
        self.reset(self._settings)
