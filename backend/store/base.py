"""The small storage interface the rest of the backend codes against.

One implementation (``MilvusStore``) serves both Milvus Lite and a Milvus server; nothing outside
``backend.store`` imports pymilvus.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

import numpy as np


@dataclass
class CollectionInfo:
    name: str
    dim: int
    embedding_model: str


@dataclass
class ChunkRow:
    """One stored chunk; ``id`` is unique within a collection."""

    id: str
    doc_id: str
    filename: str
    page: int
    page_end: int
    chunk_index: int
    content: str
    vector: Optional[np.ndarray] = None
    lang: str = ""  # "zh", "en" or "" (unknown, and every chunk of a schema-1 collection)
    kind: str = "text"  # "text", "references", "table" or "equation"


@dataclass
class Hit:
    row: ChunkRow
    score: float  # cosine similarity for dense hits; BM25 score (rank by order only) for keyword hits


@dataclass
class SearchFilter:
    """Which documents a search may see: only ``include`` (if given) and never ``exclude``."""

    include_doc_ids: Optional[Sequence[str]] = None
    exclude_doc_ids: Sequence[str] = ()


class VectorStore(ABC):
    """Chunks with a dense vector and a BM25 full-text index, one collection per knowledge base."""

    @abstractmethod
    def list_collections(self) -> list[CollectionInfo]:
        """Our collections only: foreign ones (other names or schemas) are left out."""

    @abstractmethod
    def describe(self, name: str) -> Optional[CollectionInfo]:
        """One collection's info, or None when it does not exist or is not ours."""

    @abstractmethod
    def create_collection(self, name: str, dim: int, embedding_model: str) -> None: ...

    @abstractmethod
    def rename_collection(self, old: str, new: str) -> None: ...

    @abstractmethod
    def drop_collection(self, name: str) -> None: ...

    @abstractmethod
    def has_collection(self, name: str) -> bool: ...

    @abstractmethod
    def count(self, name: str, lang: Optional[str] = None) -> int:
        """Its chunks; with ``lang``, those in that language only (StoreError where it keeps no language)."""

    @abstractmethod
    def insert(self, name: str, rows: Sequence[ChunkRow]) -> None: ...

    @abstractmethod
    def upsert(self, name: str, rows: Sequence[ChunkRow]) -> None:
        """Rows written over the rows of their ids (a renamed document's, with their own vectors)."""

    @abstractmethod
    def seal(self, name: str) -> None:
        """After an upload: persist buffered rows into indexed segments, then ``warm``."""

    @abstractmethod
    def warm(self, name: str) -> None:
        """Load the collection and build whatever its first search would otherwise build."""

    @abstractmethod
    def delete_documents(self, name: str, doc_ids: Iterable[str]) -> None: ...

    @abstractmethod
    def dense_searches(
        self, name: str, vectors: Sequence[np.ndarray], limit: int, where: Optional[SearchFilter] = None
    ) -> list[list[Hit]]:
        """Each vector's nearest rows (one request for all), each row with its vector."""

    @abstractmethod
    def keyword_searches(
        self, name: str, texts: Sequence[str], limit: int, where: Optional[SearchFilter] = None
    ) -> list[list[Hit]]:
        """Each text's BM25 hits (one request for all; an empty text finds nothing), each row with its vector."""

    def dense_search(
        self, name: str, vector: np.ndarray, limit: int, where: Optional[SearchFilter] = None
    ) -> list[Hit]:
        return self.dense_searches(name, [vector], limit, where)[0]

    def keyword_search(self, name: str, text: str, limit: int, where: Optional[SearchFilter] = None) -> list[Hit]:
        return self.keyword_searches(name, [text], limit, where)[0]

    @abstractmethod
    def vectors(self, name: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Dense vectors of the given chunk ids (for scoring keyword-only hits)."""

    @abstractmethod
    def chunks(self, name: str, doc_id: Optional[str] = None, limit: int = 0) -> list[ChunkRow]:
        """Stored chunks without vectors, of one document or of all, ordered by doc and chunk index."""

    @abstractmethod
    def close(self) -> None: ...
