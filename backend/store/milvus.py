"""Milvus Lite and Milvus server behind one code path (``MilvusClient`` with a path or a URL)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

import grpc
import numpy as np
from pymilvus import MilvusClient
from pymilvus.exceptions import MilvusException

from backend.errors import StoreError
from backend.errors import one_line as _short  # the one shortener of error messages
from backend.store.base import ChunkRow, CollectionInfo, Hit, SearchFilter, VectorStore
from backend.store.collection_list import KnownCollections
from backend.store.filters import filter_expression, in_list, quote
from backend.store.lite import (
    connect_failure,
    is_lite,
    lite_engine_is_2x,
    made_by_lite3,
    release_lite_store,
    served_here,
    store_locked,
)
from backend.store.rows import description_properties, entity_to_row, hits_of, row_to_entity, row_with_vector
from backend.store.schema import chunk_schema, dense_index, index_params

log = logging.getLogger(__name__)

SCHEMA_VERSION = "2"  # 2 added lang and kind; schema-1 collections still open, read as lang "" and kind "text"
READABLE_SCHEMAS = {"1", SCHEMA_VERSION}
PROP_SCHEMA = "doclens.schema"
PROP_MODEL = "doclens.embedding_model"
PROP_DIM = "doclens.dim"
LEGACY_OUTPUT_FIELDS = ["id", "doc_id", "filename", "page", "page_end", "chunk_index", "content"]
OUTPUT_FIELDS = [*LEGACY_OUTPUT_FIELDS, "lang", "kind"]
REQUIRED_FIELDS = {"id", "doc_id", "filename", "page", "page_end", "chunk_index", "content", "dense", "sparse"}
INSERT_BATCH = 256
QUERY_BATCH = 1000
# A document filter up to this many rows is scored exactly; HNSW under a selective filter stops early.
EXACT_FILTER_ROWS = 5000  # rows read with their text: one query, no second round trip
FILTERED_EF = 512  # HNSW search breadth when a larger filtered set goes through the index
CONNECT_TIMEOUT_S = 60
# Milvus Lite 2.x (the C++ engine) has no HNSW, and builds its other indexes in memory each time a collection
# is loaded (27 of the 28 s opening a 100k-chunk knowledge base). FLAT needs no build and is exact: ~15 ms
# per search at 100k chunks.
LITE_2X_INDEX = "FLAT"


class MilvusStore(VectorStore):
    def __init__(self, uri: str, token: str = "", index_type: str = "HNSW"):
        self.uri = uri
        self._embedded_2x = is_lite(uri) and lite_engine_is_2x()
        self.index_type = LITE_2X_INDEX if index_type == "HNSW" and self._embedded_2x else index_type
        self._loaded: set[str] = set()
        self._legacy: set[str] = set()  # schema-1 collections: no lang/kind fields
        self._known = KnownCollections(sole_owner=is_lite(uri))  # listings answered while a collection loads
        self._lock = threading.RLock()
        self._client = self._connect(uri, token)

    # -- connection ---------------------------------------------------------------------------

    @staticmethod
    def _connect(uri: str, token: str) -> MilvusClient:
        lite = is_lite(uri)
        if lite:
            Path(uri).parent.mkdir(parents=True, exist_ok=True)
            if made_by_lite3(Path(uri)):  # DocLens moves such a store aside first (backend.knowledge_bases.old_folders)
                raise StoreError(
                    f"the Milvus Lite store {uri} was made by Milvus Lite 3.x, which this version "
                    f"cannot read: move it away, or open its data folder with DocLens to migrate it"
                )
            if not served_here(uri) and store_locked(uri):  # before Lite logs its own error
                raise StoreError(connect_failure(uri, lite, None))
        try:
            return _client(uri, token)
        except MilvusException as exc:
            if lite:  # an engine process that died at start (a busy box, a just-stopped one): start one again
                log.info("Milvus Lite did not start for %s (%s): starting it again", uri, _short(exc))
                release_lite_store(uri)
                try:
                    return _client(uri, token)
                except MilvusException as again:
                    exc = again
            raise StoreError(connect_failure(uri, lite, exc)) from None

    def close(self) -> None:
        try:
            self._client.close()
        except MilvusException as exc:  # closing twice or a dead server is not worth a traceback
            log.debug("closing Milvus client: %s", exc)
        if is_lite(self.uri):
            release_lite_store(self.uri)

    # -- collections --------------------------------------------------------------------------

    def list_collections(self) -> list[CollectionInfo]:
        known = self._known.listing()
        if known is not None:
            return known
        names = self._call("list collections", self._client.list_collections)
        infos = [info for info in map(self._collection_info, names) if info is not None]
        self._known.remember(infos)
        return infos

    def describe(self, name: str) -> Optional[CollectionInfo]:
        known = self._known.info(name)
        if known is not None:
            return known
        info = self._collection_info(name) if self.has_collection(name) else None
        if info is not None:
            self._known.described(info)
        return info

    def _collection_info(self, name: str) -> Optional[CollectionInfo]:
        try:
            desc = self._client.describe_collection(name)
        except MilvusException as exc:
            log.warning("cannot describe collection %s: %s", name, exc)
            return None
        props = desc.get("properties") or description_properties(desc.get("description", ""))
        fields = {f["name"]: f for f in desc.get("fields", [])}
        if props.get(PROP_SCHEMA) not in READABLE_SCHEMAS or not set(fields) >= REQUIRED_FIELDS:
            return None
        (self._legacy.discard if "lang" in fields else self._legacy.add)(name)  # schema 1 has no lang field
        dim = int((fields["dense"].get("params") or {}).get("dim", 0))
        return CollectionInfo(name=name, dim=dim, embedding_model=str(props.get(PROP_MODEL, "")))

    def has_collection(self, name: str) -> bool:
        known = self._known.info(name) is not None
        return known or bool(self._call(f"check collection {name}", self._client.has_collection, name))

    def create_collection(self, name: str, dim: int, embedding_model: str) -> None:
        self._known.forget()
        props = {PROP_SCHEMA: SCHEMA_VERSION, PROP_MODEL: embedding_model, PROP_DIM: str(dim)}
        schema = chunk_schema(self._client, dim, props)
        try:
            self._client.create_collection(
                name, schema=schema, index_params=index_params(self._client, self.index_type), properties=props
            )
        except MilvusException as exc:
            if self.index_type != "HNSW" or "only support" not in _short(exc):
                raise StoreError(f"Milvus ({self._where()}): create collection {name} failed: {_short(exc)}") from None
            # Milvus Lite 2.x served over TCP: the same engine (see LITE_2X_INDEX)
            log.info("Milvus at %s has no HNSW index: using %s", self._where(), LITE_2X_INDEX)
            self.index_type = LITE_2X_INDEX
            if self.has_collection(name):
                self.drop_collection(name)
            self._call(
                f"create collection {name}",
                self._client.create_collection,
                name,
                schema=schema,
                index_params=index_params(self._client, self.index_type),
                properties=props,
            )
        self._loaded.add(name)
        self._known.forget()  # again: a describe that ran meanwhile may have remembered the old state

    def rename_collection(self, old: str, new: str) -> None:
        self._known.forget()
        rename = self._copy_collection if self._embedded_2x else self._client.rename_collection  # Lite 2.x: none
        try:
            rename(old, new)
        except MilvusException as exc:
            raise StoreError(f"Milvus ({self._where()}): rename collection {old} failed: {_short(exc)}") from None
        except grpc.RpcError as exc:  # UNIMPLEMENTED: Milvus Lite served over TCP (its log line: lite.py)
            if exc.code() != grpc.StatusCode.UNIMPLEMENTED:
                raise StoreError(f"Milvus ({self._where()}): rename collection {old} failed: {exc.code()}") from None
            self._copy_collection(old, new)
        finally:
            self._known.forget()
        self._loaded.discard(old)
        if old in self._legacy:
            self._legacy.add(new)

    def _copy_collection(self, old: str, new: str) -> None:
        info = self._collection_info(old)
        if info is None:
            raise StoreError(f"Milvus ({self._where()}): rename collection {old} failed: not a DocLens collection")
        self.create_collection(new, info.dim, info.embedding_model)
        try:
            for batch in self._rows_with_vectors(old):
                self.insert(new, batch)
            self.seal(new)
        except BaseException:
            self.drop_collection(new)
            raise
        self.drop_collection(old)

    def _rows_with_vectors(self, name: str) -> Iterable[list[ChunkRow]]:
        if not self.count(name):  # Lite 2.5 fails a vector query on an empty collection ("loss raw data")
            return
        offset = 0
        while True:
            batch = self._call(
                f"read rows of {name}",
                self._client.query,
                name,
                filter="",
                output_fields=[*self._output_fields(name), "dense"],
                limit=QUERY_BATCH,
                offset=offset,
            )
            rows = [entity_to_row(e) for e in batch]
            for row, entity in zip(rows, batch):
                row.vector = np.asarray(entity["dense"], dtype=np.float32)
            if rows:
                yield rows
            offset += len(batch)
            if len(batch) < QUERY_BATCH:
                return

    def drop_collection(self, name: str) -> None:
        self._known.forget()
        try:
            self._call(f"drop collection {name}", self._client.drop_collection, name)
        finally:
            self._known.forget()
        self._loaded.discard(name)

    def load(self, name: str) -> None:
        """Collections come back released after a restart: load before any search or query."""
        with self._lock:
            if name in self._loaded:
                return
            self._collection_info(name)  # learns whether it is a schema-1 collection
            if self._embedded_2x and self.index_type == LITE_2X_INDEX:
                self._replace_built_index(name)
            with self._known.loading():
                self._call(f"load collection {name}", self._client.load_collection, name)
            self._loaded.add(name)

    def _replace_built_index(self, name: str) -> None:
        """A collection an earlier DocLens gave AUTOINDEX on Milvus Lite 2.x: FLAT instead, before it loads
        (on a released collection that is instant there; see LITE_2X_INDEX)."""
        index = self._call(f"describe index of {name}", self._client.describe_index, name, "dense") or {}
        if index.get("index_type", LITE_2X_INDEX) == LITE_2X_INDEX:
            return
        self._call(f"release {name}", self._client.release_collection, name)
        self._call(f"drop index of {name}", self._client.drop_index, name, "dense")
        params = self._client.prepare_index_params()
        params.add_index("dense", **dense_index(self.index_type))
        self._call(f"index {name}", self._client.create_index, name, params)
        log.info("collection %s: dense index %s replaced by %s", name, index.get("index_type"), LITE_2X_INDEX)

    def seal(self, name: str) -> None:
        """After an upload: move the rows from the write buffer into a sealed, indexed segment (Milvus Lite
        keeps rows in memory until 128 MB, ~45k chunks, searched by brute force until then; a server seals
        on its own schedule), then build what the first search would build."""
        self.load(name)
        self._call(f"flush {name}", self._client.flush, name)
        self.warm(name)

    def warm(self, name: str) -> None:
        """Load the collection and run one search of each kind, so that what a first search builds (Milvus
        Lite 2.5 loads its jieba dictionary on the first keyword search: ~1 s) is ready before a user asks.
        Not when it is empty: BM25 over no rows is an error there ("Invalid sparse row: NaN or Inf")."""
        info = self.describe(name)
        if info is None or not info.dim or not self.count(name):  # count loads it
            return
        probe = np.ones(info.dim, dtype=np.float32) / np.sqrt(info.dim)
        self.dense_search(name, probe, 1)
        self.keyword_search(name, "warm", 1)

    def count(self, name: str, lang: Optional[str] = None) -> int:
        self.load(name)
        if lang is not None and name in self._legacy:  # collections of the original system keep no language
            raise StoreError(f"{name} keeps no language of its chunks")
        where = f"lang == {quote(lang)}" if lang is not None else ""
        rows = self._call(f"count {name}", self._client.query, name, filter=where, output_fields=["count(*)"])
        return int(rows[0]["count(*)"]) if rows else 0

    # -- rows ---------------------------------------------------------------------------------

    def insert(self, name: str, rows: Sequence[ChunkRow]) -> None:
        self.load(name)
        for start in range(0, len(rows), INSERT_BATCH):
            batch = [row_to_entity(r, legacy=name in self._legacy) for r in rows[start : start + INSERT_BATCH]]
            self._call(f"insert into {name}", self._client.insert, name, batch)

    def upsert(self, name: str, rows: Sequence[ChunkRow]) -> None:
        self.load(name)
        for start in range(0, len(rows), INSERT_BATCH):
            batch = [row_to_entity(r, legacy=name in self._legacy) for r in rows[start : start + INSERT_BATCH]]
            self._call(f"upsert into {name}", self._client.upsert, name, batch)

    def delete_documents(self, name: str, doc_ids: Iterable[str]) -> None:
        ids = list(doc_ids)
        if not ids:
            return
        self.load(name)
        self._call(f"delete from {name}", self._client.delete, name, filter=in_list("doc_id", ids))

    def dense_searches(
        self, name: str, vectors: Sequence[np.ndarray], limit: int, where: Optional[SearchFilter] = None
    ) -> list[list[Hit]]:
        if not len(vectors):
            return []
        self.load(name)
        filtered = where is not None and where.include_doc_ids is not None
        if filtered and where is not None:
            exact = self._exact_dense_searches(name, vectors, limit, where)
            if exact is not None:
                return exact
        params: dict[str, Any] = {"metric_type": "COSINE"}
        if self.index_type == "HNSW":
            params["params"] = {"ef": max(FILTERED_EF if filtered else 64, limit)}
        result = self._call(
            f"search {name}",
            self._client.search,
            name,
            data=[np.asarray(vector, dtype=np.float32).tolist() for vector in vectors],
            anns_field="dense",
            limit=limit,
            output_fields=[*self._output_fields(name), "dense"],
            filter=filter_expression(where),
            search_params=params,
        )
        return [hits_of(found) for found in result]

    def _exact_dense_searches(
        self, name: str, vectors: Sequence[np.ndarray], limit: int, where: SearchFilter
    ) -> Optional[list[list[Hit]]]:
        """The full top-k within a few documents: their rows scored exactly (None: too many rows).

        Milvus Lite's HNSW walk ends after ``ef`` candidates, nearly all outside a one-document filter:
        it returned 106 of 311 in-document chunks at 100k. Scoring the document's own rows cannot miss."""
        expr = filter_expression(where)
        rows = self._call(
            f"read vectors of {name}",
            self._client.query,
            name,
            filter=expr,
            output_fields=[*self._output_fields(name), "dense"],
            limit=EXACT_FILTER_ROWS + 1,
        )
        if len(rows) > EXACT_FILTER_ROWS:
            return None
        if not rows:
            return [[] for _ in vectors]
        matrix = np.asarray([r["dense"] for r in rows], dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1)
        found = []
        for vector in vectors:
            query = np.asarray(vector, dtype=np.float32)
            scale = norms * (np.linalg.norm(query) or 1.0)
            scores = matrix @ query / np.where(scale == 0, 1.0, scale)
            best = np.argsort(-scores, kind="stable")[:limit]
            found.append([Hit(row_with_vector(rows[i]), float(scores[i])) for i in best])  # of 5,000: the best
        return found

    def keyword_searches(
        self, name: str, texts: Sequence[str], limit: int, where: Optional[SearchFilter] = None
    ) -> list[list[Hit]]:
        asked = [i for i, text in enumerate(texts) if text.strip()]
        found: list[list[Hit]] = [[] for _ in texts]
        if not asked:
            return found
        self.load(name)
        try:
            result = self._call(
                f"keyword search {name}",
                self._client.search,
                name,
                data=[texts[i] for i in asked],
                anns_field="sparse",
                limit=limit,
                output_fields=[*self._output_fields(name), "dense"],
                filter=filter_expression(where),
                search_params={"metric_type": "BM25"},
            )
        except StoreError:
            if self.count(name) == 0:  # Lite 2.5 divides by an average length of 0: "NaN ... sparse row"
                return found
            raise
        for i, hits in zip(asked, result):
            found[i] = hits_of(hits)
        return found

    def vectors(self, name: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        if not ids:
            return {}
        self.load(name)
        rows = self._call(
            f"read vectors of {name}",
            self._client.query,
            name,
            filter=in_list("id", ids),
            output_fields=["id", "dense"],
        )
        return {r["id"]: np.asarray(r["dense"], dtype=np.float32) for r in rows}

    def chunks(self, name: str, doc_id: Optional[str] = None, limit: int = 0) -> list[ChunkRow]:
        self.load(name)
        expr = in_list("doc_id", [doc_id]) if doc_id is not None else ""
        rows: list[ChunkRow] = []
        offset = 0
        while True:
            batch = self._call(
                f"read chunks of {name}",
                self._client.query,
                name,
                filter=expr,
                output_fields=self._output_fields(name),
                limit=QUERY_BATCH,
                offset=offset,
            )
            rows.extend(entity_to_row(e) for e in batch)
            offset += len(batch)
            if len(batch) < QUERY_BATCH or (limit and len(rows) >= limit):
                break
        rows.sort(key=lambda r: (r.doc_id, r.chunk_index))
        return rows[:limit] if limit else rows

    # -- helpers ------------------------------------------------------------------------------

    def _output_fields(self, name: str) -> list[str]:
        return LEGACY_OUTPUT_FIELDS if name in self._legacy else OUTPUT_FIELDS

    def _call(self, what: str, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except MilvusException as exc:
            raise StoreError(f"Milvus ({self._where()}): {what} failed: {_short(exc)}") from None

    def _where(self) -> str:
        return self.uri if self.uri.startswith(("http", "tcp", "grpc")) else f"Lite store {self.uri}"


def _client(uri: str, token: str) -> MilvusClient:
    # Only the connection waits this long: Lite 2.5 starts its engine process first (seconds on a busy box)
    return MilvusClient(uri=uri, token=token, timeout=CONNECT_TIMEOUT_S)
