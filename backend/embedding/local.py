"""Local sentence-transformers models: the bundled e5 model (float32 or bfloat16) or a Hugging Face hub model.

A hub model is taken from the local Hugging Face cache first; only when it is not there is the hub asked,
and only if it can be reached (a hub name needs internet the first time)."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from typing import Any, Optional
from urllib.parse import urlparse

import numpy as np

from backend.cpu import has_any_flag, usable_cpus
from backend.embedding.base import (
    BUNDLED_PREFIX,
    DEFAULT_BUNDLED,
    E5_PROMPTS,
    BatchedEmbedder,
    Dtype,
    Kind,
    count_tokens,
    is_e5_model,
    max_seq_length,
    position_limit,
)
from backend.embedding.bundled import bundled_folder, hf_offline
from backend.errors import EmbeddingError, one_line
from backend.settings import Settings

log = logging.getLogger(__name__)

CPU_BF16_FLAGS = ("amx_bf16", "avx512_bf16")


def cpu_supports_bf16() -> bool:
    """bfloat16 is only faster than float32 with native bf16 instructions (AMX or AVX512-BF16)."""
    return has_any_flag(*CPU_BF16_FLAGS)


def float_dtype() -> Dtype:
    return "bfloat16" if cpu_supports_bf16() else "float32"


class SentenceTransformerEmbedder(BatchedEmbedder):
    def __init__(self, model: Any, model_id: str, batch_size: int, prompts: dict[Kind, str]) -> None:
        super().__init__(model_id, int(model.get_embedding_dimension()), batch_size)
        self.model = model
        self.prompts = prompts
        self._lock = threading.Lock()  # one forward pass at a time: the tokenizer is not re-entrant

    @classmethod
    def load(cls, settings: Settings, model_id: str, dtype: Dtype) -> SentenceTransformerEmbedder:
        e = settings.embedding
        started = time.monotonic()
        if e.model.startswith(BUNDLED_PREFIX):
            model = _load_bundled(settings, dtype)
        else:
            model = _load_hub_model(e.model, dtype)
        model.max_seq_length = max_seq_length(_model_position_limit(model), e.max_seq_length, model_id)
        embedder = cls(model, model_id, e.batch_size, _prompts_for(model_id, model))
        log.info(
            "Embedding model %s loaded in %.1f s (%s, %d dims, %d threads)",
            model_id,
            time.monotonic() - started,
            dtype,
            embedder.dim,
            _torch_threads(),
        )
        return embedder

    def _sort_lengths(self, texts: list[str]) -> list[int]:
        # Tokens, not characters: 400 characters are ~100 tokens of English but ~250 of Chinese.
        with self._lock:
            return count_tokens(self.model.tokenizer, texts)

    def _embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        prompt = self.prompts.get(kind) or None
        with self._lock:
            vectors = self.model.encode(
                texts,
                prompt=prompt,
                normalize_embeddings=True,
                batch_size=len(texts),
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)


def _load_bundled(settings: Settings, dtype: str) -> Any:
    folder = bundled_folder(settings)
    with hf_offline():
        try:
            return _sentence_transformer(str(folder), dtype, local_files_only=True)
        except Exception as exc:  # a damaged cache folder: say where it is
            raise EmbeddingError(
                f"bundled embedding model in {folder} cannot be loaded "
                f"({one_line(exc)}); delete that folder to rebuild it"
            ) from None


def _load_hub_model(name: str, dtype: str) -> Any:
    try:  # the local Hugging Face cache first: no network, and a model once fetched keeps working offline
        return _sentence_transformer(name, dtype, local_files_only=True)
    except Exception as exc:
        log.debug("Embedding model %s is not usable from the local cache (%s)", name, one_line(exc))
    if not _hub_reachable():  # fail in seconds, not after the hub client's minute of retries
        raise EmbeddingError(_offline_message(name)) from None
    try:
        return _sentence_transformer(name, dtype, local_files_only=False)
    except Exception as exc:
        if _looks_offline(exc):
            raise EmbeddingError(_offline_message(name)) from None
        raise EmbeddingError(f"embedding model {name!r} cannot be loaded ({one_line(exc)})") from None


def _offline_message(name: str) -> str:
    return (
        f"embedding model {name!r} is not available offline (not in the Hugging Face cache and "
        f"the hub cannot be reached); use embedding.model: {DEFAULT_BUNDLED}"
    )


def _hub_reachable(timeout: float = 3.0) -> bool:
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return False
    if any(os.environ.get(name) for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True  # only the proxy knows; let the hub client try
    host = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co").hostname or "huggingface.co"
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def _sentence_transformer(name_or_path: str, dtype: str, local_files_only: bool) -> Any:
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(usable_cpus())
    torch_dtype = torch.bfloat16 if dtype == "bfloat16" else torch.float32
    return SentenceTransformer(
        name_or_path, device="cpu", local_files_only=local_files_only, model_kwargs={"dtype": torch_dtype}
    )


def _looks_offline(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}".lower()
    markers = (
        "offline",
        "connection",
        "resolve",
        "cannot find the requested files",
        "localentrynotfound",
        "couldn't connect",
        "network",
        "max retries",
        "timed out",
    )
    return any(marker in text for marker in markers)


def _model_position_limit(model: Any) -> Optional[int]:
    try:
        config = model[0].auto_model.config
    except (AttributeError, IndexError, TypeError):
        return None
    return position_limit(getattr(config, "model_type", ""), getattr(config, "max_position_embeddings", None))


def _prompts_for(model_id: str, model: Any) -> dict[Kind, str]:
    if is_e5_model(model_id):
        return {"query": E5_PROMPTS["query"], "passage": E5_PROMPTS["passage"]}
    configured = getattr(model, "prompts", None) or {}
    return {
        "query": configured.get("query") or "",
        "passage": configured.get("document") or configured.get("passage") or "",
    }


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()
