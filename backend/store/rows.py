"""How a chunk row is written to and read from a Milvus collection (entities, the description's properties)."""

from __future__ import annotations

import json
from typing import Any, Iterable

import numpy as np

from backend.errors import StoreError
from backend.store.base import ChunkRow, Hit

DESCRIPTION_PREFIX = "DocLens chunks "  # then the collection's properties as JSON (model, dimensions, schema)
MAX_CONTENT = 65535  # bytes of the VARCHAR content field


def row_to_entity(row: ChunkRow, legacy: bool = False) -> dict[str, Any]:
    if row.vector is None:
        raise StoreError(f"chunk {row.id} of {row.filename} has no vector")
    entity = {
        "id": row.id,
        "doc_id": row.doc_id,
        "filename": row.filename[:1024],
        "page": int(row.page),
        "page_end": int(row.page_end),
        "chunk_index": int(row.chunk_index),
        "content": _fit_varchar(row.content),
        "dense": np.asarray(row.vector, dtype=np.float32).tolist(),
    }
    if not legacy:
        entity.update(lang=row.lang[:8], kind=row.kind[:16])
    return entity


def description_properties(description: str) -> dict[str, str]:
    if not description.startswith(DESCRIPTION_PREFIX):
        return {}
    try:
        props = json.loads(description[len(DESCRIPTION_PREFIX) :])
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in props.items()} if isinstance(props, dict) else {}


def _fit_varchar(text: str) -> str:
    """Milvus limits VARCHAR by bytes; a chunk is far smaller, but never fail an upload over it."""
    data = text.encode("utf-8")
    return text if len(data) <= MAX_CONTENT else data[:MAX_CONTENT].decode("utf-8", "ignore")


def entity_to_row(entity: dict[str, Any]) -> ChunkRow:
    return ChunkRow(
        id=entity["id"],
        doc_id=entity["doc_id"],
        filename=entity["filename"],
        page=int(entity["page"]),
        page_end=int(entity["page_end"]),
        chunk_index=int(entity["chunk_index"]),
        content=entity["content"],
        lang=entity.get("lang") or "",
        kind=entity.get("kind") or "text",
    )


def hits_of(result: Iterable[dict[str, Any]]) -> list[Hit]:
    """One query's search hits, each row with its stored vector (so scoring a hit needs no second read)."""
    return [Hit(row_with_vector(h["entity"]), float(h["distance"])) for h in result]


def row_with_vector(entity: dict[str, Any]) -> ChunkRow:
    row = entity_to_row(entity)
    row.vector = np.asarray(entity["dense"], dtype=np.float32)
    return row
