"""The collection DocLens writes: its fields, its BM25 function and its indexes."""

from __future__ import annotations

import json
from typing import Any, Optional

from pymilvus import DataType, Function, FunctionType, MilvusClient

from backend.store.rows import DESCRIPTION_PREFIX, MAX_CONTENT

# Milvus Lite 2.5 and the server alike: Chinese words via jieba, Latin words kept and lowercased (a question's
# "transformer" finds "Transformer"; the query goes through the same analyzer).
ANALYZER = {"tokenizer": "jieba", "filter": ["lowercase", "cnalphanumonly"]}


def index_params(client: MilvusClient, index_type: str):
    index = client.prepare_index_params()
    index.add_index("dense", **dense_index(index_type))
    index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    return index


def chunk_schema(client: MilvusClient, dim: int, props: Optional[dict[str, str]] = None):
    # The properties go into the description too: Milvus Lite 2.5 drops collection properties.
    schema = client.create_schema(
        auto_id=False, enable_dynamic_field=False, description=DESCRIPTION_PREFIX + json.dumps(props or {})
    )
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=128)
    schema.add_field("doc_id", DataType.VARCHAR, max_length=128)
    schema.add_field("filename", DataType.VARCHAR, max_length=1024)
    schema.add_field("page", DataType.INT64)
    schema.add_field("page_end", DataType.INT64)
    schema.add_field("chunk_index", DataType.INT64)
    schema.add_field("lang", DataType.VARCHAR, max_length=8)
    schema.add_field("kind", DataType.VARCHAR, max_length=16)
    schema.add_field(
        "content", DataType.VARCHAR, max_length=MAX_CONTENT, enable_analyzer=True, analyzer_params=ANALYZER
    )
    schema.add_field("dense", DataType.FLOAT_VECTOR, dim=dim)
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_function(
        Function(
            name="content_bm25",
            function_type=FunctionType.BM25,
            input_field_names=["content"],
            output_field_names=["sparse"],
        )
    )
    return schema


def dense_index(index_type: str) -> dict[str, Any]:
    params = {"HNSW": {"M": 16, "efConstruction": 200}, "IVF_FLAT": {"nlist": 128}}.get(index_type, {})
    return {"index_type": index_type, "metric_type": "COSINE", "params": params}
