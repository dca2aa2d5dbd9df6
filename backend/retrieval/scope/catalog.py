"""The names each document of a knowledge base can be called by: its file name, arXiv id and titles."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import PurePath
from typing import Optional, Sequence

from backend.text import ENGLISH_STOPWORDS

ARXIV_ID = re.compile(r"(?<![\d.])(\d{4}\.\d{4,5})(v\d+)?(?![\d])")
OLD_ARXIV_ID = re.compile(r"\b([a-z\-]+(?:\.[A-Z]{2})?/\d{7})(v\d+)?\b")
WORD = re.compile(r"\w+(?:[-'’]\w+)*")


@dataclass(frozen=True)
class CatalogEntry:
    """What one document can be called: its file name, its arXiv id (if any), the title its file name
    gives, and title-like lines from the top of its first page."""

    doc_id: str
    file: str
    arxiv_ids: tuple[str, ...] = ()
    titles: tuple[str, ...] = ()  # [0]: from the file name; the rest: from the first page


def catalog_entry(doc_id: str, file: str, first_page: str = "") -> CatalogEntry:
    """Names of a document from its file name and the top of its first page."""
    stem = PurePath(file).stem
    ids = {m.group(1) for m in ARXIV_ID.finditer(stem)} | {m.group(1) for m in OLD_ARXIV_ID.finditer(stem)}
    head = first_page[:3000]
    ids |= {m.group(1) for m in re.finditer(r"arXiv:\s*(\d{4}\.\d{4,5})", head)}
    titles = [re.sub(r"[_\s]+", " ", ARXIV_ID.sub("", stem)).strip(" -–_")]
    titles += [line.strip() for line in head.splitlines()[:8] if _looks_like_a_title(line)][:2]
    return CatalogEntry(doc_id, file, tuple(sorted(ids)), tuple(t for t in titles if t))


def _looks_like_a_title(line: str) -> bool:
    """A heading line: 3-15 words, mostly capitalised (or Chinese), not ending like a sentence."""
    words = WORD.findall(line)
    if not 3 <= len(words) <= 15 or line.rstrip().endswith((".", ",", ";", ":", "。", "，")):
        return False
    capitalised = sum(1 for w in words if w[0].isupper() or not w[0].isascii())
    content = sum(1 for w in words if w.casefold() not in ENGLISH_STOPWORDS)
    return capitalised >= max(2, 0.8 * content)


_Cached = tuple[int, tuple[str, ...], list["CatalogEntry"]]  # registry version, complete doc ids, catalog


class Catalogs:
    """The catalog of each knowledge base, rebuilt when its complete documents change."""

    def __init__(self) -> None:
        self._cached: dict[str, _Cached] = {}
        self._lock = threading.Lock()

    def get(self, collection: str, registry, excluded: Sequence[str] = ()) -> list[CatalogEntry]:
        version = registry.version()  # unchanged: nothing to read (a question asks it of each knowledge base)
        with self._lock:
            cached = self._cached.get(collection)
        if cached is None or cached[0] != version:
            cached = self._refreshed(registry, version, cached)
            with self._lock:
                self._cached[collection] = cached
        leaving_out = set(excluded)
        return [e for e in cached[2] if e.doc_id not in leaving_out]

    @staticmethod
    def _refreshed(registry, version: int, cached: Optional[_Cached]) -> _Cached:
        """The catalog after the registry changed: rebuilt only when its complete documents did (an upload
        commits often; the first pages of 1,500 documents take 1-2 s to read)."""
        documents = registry.documents(status="complete")
        key = tuple(sorted(d.doc_id for d in documents))
        if cached is not None and cached[1] == key:
            return (version, key, cached[2])
        first = registry.first_pages()
        return (version, key, [catalog_entry(d.doc_id, d.file, first.get(d.doc_id, "")) for d in documents])
