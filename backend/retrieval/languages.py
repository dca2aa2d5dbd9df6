"""Which languages a knowledge base's passages are in. A question is translated only for a library that
holds passages in the other language: elsewhere the model's translation costs a request before the sources
show (half of what ``llm.qps`` allows) and finds nothing the question itself does not."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from backend.errors import StoreError
from backend.retrieval.query_plan import OTHER_LANGUAGE
from backend.store.base import VectorStore

if TYPE_CHECKING:
    from backend.knowledge_bases.open_kb import OpenKB

log = logging.getLogger(__name__)


class LibraryLanguages:
    """Whether each knowledge base holds passages in a language, counted again when its documents change."""

    def __init__(self, store: VectorStore) -> None:
        self.store = store
        self._cached: dict[tuple[str, str], tuple[int, bool]] = {}  # (collection, lang) -> (version, holds)
        self._lock = threading.Lock()

    def holds(self, kb: OpenKB, lang: str) -> bool:
        version = kb.registry.version()  # a document stored or removed anywhere changes it
        key = (kb.collection, lang)
        with self._lock:
            cached = self._cached.get(key)
        if cached is not None and cached[0] == version:
            return cached[1]
        try:
            held = self.store.count(kb.collection, lang) > 0
        except StoreError as exc:  # not known: translate, as for a library of both languages
            log.info("languages of %s: %s", kb.collection, exc)
            held = True
        with self._lock:
            self._cached[key] = (version, held)
        return held

    def worth_translating(self, kb: OpenKB, question_lang: str) -> bool:
        """A translation finds passages in the other language only: does ``kb`` hold any?"""
        other = OTHER_LANGUAGE.get(question_lang, "")
        return bool(other) and self.holds(kb, other)
