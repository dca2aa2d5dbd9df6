"""The collections a store listed last, answered from memory while a collection loads.

Milvus Lite answers one request at a time: while it loads a collection (10 s at 100k chunks, Lite 2.5
reads every row back) a listing or a describe waits for the load, and with them the web page, which lists
the knowledge bases to draw itself. Nothing a load does changes the list, so the last answer stands until
this process creates or drops a collection.

An embedded store belongs to this process alone (its file is locked), so there a collection once described
is answered from memory until this process creates, renames or drops one: every search opens its knowledge
bases, and a describe is a round trip (12 ms of a question over ten knowledge bases).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator, Optional, Sequence

from backend.store.base import CollectionInfo


class KnownCollections:
    def __init__(self, sole_owner: bool = False) -> None:
        self._lock = threading.Lock()
        self._infos: Optional[dict[str, CollectionInfo]] = None
        self._loads = 0
        self._sole_owner = sole_owner
        self._described: dict[str, CollectionInfo] = {}

    def described(self, info: CollectionInfo) -> None:
        """One collection as the store described it: kept while nothing is created or dropped (sole owner only)."""
        if self._sole_owner:
            with self._lock:
                self._described[info.name] = info

    def remember(self, infos: Sequence[CollectionInfo]) -> None:
        with self._lock:
            self._infos = {info.name: info for info in infos}

    def forget(self) -> None:
        """After a collection is created or dropped: the next listing asks the store again."""
        with self._lock:
            self._infos = None
            self._described.clear()

    @contextmanager
    def loading(self) -> Iterator[None]:
        with self._lock:
            self._loads += 1
        try:
            yield
        finally:
            with self._lock:
                self._loads -= 1

    def listing(self) -> Optional[list[CollectionInfo]]:
        """The last listing while a load runs, else None (ask the store)."""
        with self._lock:
            return list(self._infos.values()) if self._loads and self._infos is not None else None

    def info(self, name: str) -> Optional[CollectionInfo]:
        """One collection of the last listing while a load runs, or as described before; else None (ask the store)."""
        with self._lock:
            if name in self._described:
                return self._described[name]
            return self._infos.get(name) if self._loads and self._infos is not None else None
