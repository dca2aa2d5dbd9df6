"""What every embedding backend shares: the typed :class:`Embedder` protocol that ingestion and retrieval
code against, the batching base class, clean model inputs, the e5 prompts and model-length helpers."""

from __future__ import annotations

import json
import logging
import re
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Callable, Iterator, Literal, Optional, Protocol, Sequence, runtime_checkable

import numpy as np

from backend.cpu import let_questions_pass
from backend.errors import EmbeddingError

log = logging.getLogger(__name__)

BUNDLED_PREFIX = "bundled:"
BUNDLED_MODELS = ("multilingual-e5-small",)
BUNDLED_DIMS = {"multilingual-e5-small": 384}  # known before the model is built: a KB can be created meanwhile
DEFAULT_BUNDLED = f"{BUNDLED_PREFIX}{BUNDLED_MODELS[0]}"
OPENAI_PREFIX = "openai:"
# intfloat's e5 models are trained with these prefixes; written once here for every backend and the build.
E5_QUERY_PROMPT = "query: "
E5_PASSAGE_PROMPT = "passage: "
E5_PROMPTS = {"query": E5_QUERY_PROMPT, "passage": E5_PASSAGE_PROMPT}
# A text with no content still gets a row: most endpoints refuse "", and a space embeds as "nothing".
EMPTY_TEXT = " "

Progress = Callable[[int, int], None]
Kind = Literal["query", "passage"]
Dtype = Literal["float32", "bfloat16", "int8"]
Int8Runtime = Literal["onnxruntime-q4", "onnxruntime", "openvino"]

_SURROGATES = re.compile("[\ud800-\udfff]")


@runtime_checkable
class Embedder(Protocol):
    """Embeds texts into float32, L2-normalised rows of length ``dim``."""

    model_id: str  # what a knowledge base records, e.g. "bundled:multilingual-e5-small"
    dim: int

    def embed_passages(self, texts: Sequence[str], progress: Optional[Progress] = None) -> np.ndarray: ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def warm_up(self) -> None: ...


# Typical questions' lengths (query shapes are padded to 16-token steps): one short, one long
WARM_UP_QUESTIONS = ("What does table 2 show?", "论文第三节提出的方法在哪些数据集上优于基线模型，提高了多少？")


def clean_text(text: object) -> str:
    """A text every tokenizer and endpoint accepts: a ``str`` that encodes as UTF-8 and is not empty.

    PDF text can hold UTF-16 surrogates (pdfium gives a character outside the BMP, such as the math
    italic 𝜇, as two code units); a pair becomes its character again and a lone half becomes U+FFFD.
    Anything else is left exactly as it is, so ordinary texts keep their vectors."""
    value = text if isinstance(text, str) else ("" if text is None else str(text))
    if _SURROGATES.search(value):
        value = value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return value if value.strip() else EMPTY_TEXT


class BatchedEmbedder(ABC):
    """The shared implementation: clean inputs, length-sorted batches, shape checks, normalised rows."""

    model_id: str
    dim: int

    def __init__(self, model_id: str, dim: int, batch_size: int) -> None:
        self.model_id = model_id
        self.dim = dim
        self.batch_size = batch_size

    def embed_passages(self, texts: Sequence[str], progress: Optional[Progress] = None) -> np.ndarray:
        return self._embed_all([clean_text(t) for t in texts], "passage", progress)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed_all([clean_text(t) for t in texts], "query", None)

    def warm_up(self) -> None:
        """Embed questions of the usual lengths once, so that the first real question runs at full speed."""
        for question in WARM_UP_QUESTIONS:
            self.embed_queries([question])

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
        batches = [order[start : start + self.batch_size] for start in range(0, len(order), self.batch_size)]
        done = 0
        for indices, vectors in zip(batches, self._embed_batches([[texts[i] for i in b] for b in batches], kind)):
            self._check_shape(vectors, len(indices))
            out[indices] = vectors
            done += len(indices)
            if progress is not None:
                progress(done, len(texts))
        return l2_normalise(out)

    def _embed_batches(self, batches: list[list[str]], kind: Kind) -> Iterator[np.ndarray]:
        """Each batch's vectors, in order; a model that can run batches side by side overrides this."""
        for batch in batches:
            if kind == "passage":
                let_questions_pass()
            yield self._embed_batch(batch, kind)

    def _check_shape(self, vectors: np.ndarray, rows: int) -> None:
        if vectors.shape != (rows, self.dim):
            raise EmbeddingError(
                f"embedding model {self.model_id}: got vectors of shape {vectors.shape}, expected ({rows}, {self.dim})"
            )


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)  # an all-zero row stays zero instead of NaN


# ----------------------------------------------------------------------------------------------
# Helpers for local models (sentence-transformers and int8 alike)
# ----------------------------------------------------------------------------------------------


def count_tokens(tokenizer: Any, texts: list[str]) -> list[int]:
    """Each text's length in tokens, untruncated (a Hugging Face tokenizer; callers hold its lock)."""
    encoded = tokenizer(texts, add_special_tokens=False, truncation=False, verbose=False)["input_ids"]
    return [len(ids) for ids in encoded]


def is_e5_model(model_id: str) -> bool:
    """intfloat's e5 family expects "query: " / "passage: " (the instruct variants excepted)."""
    name = model_id.lower()
    return bool(re.search(r"(^|[/:_-])e5([-_]|$)", name)) and "instruct" not in name and "mistral" not in name


def max_seq_length(limit: Optional[int], wanted: int, model_id: str) -> int:
    """The configured length, but never past the model's position table."""
    if limit and wanted > limit:
        log.warning("embedding.max_seq_length %d is more than %s reads; using %d", wanted, model_id, limit)
        return limit
    return wanted


def log_loaded(model_id: str, started: float, how: str) -> None:
    log.info("Embedding model %s loaded in %.1f s (%s)", model_id, time.monotonic() - started, how)


def folder_seq_length(folder: Path, wanted: int, model_id: str) -> int:
    """The configured length for the model in ``folder`` (a transformers folder), within its position table."""
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    return max_seq_length(
        position_limit(config.get("model_type", ""), config.get("max_position_embeddings")), wanted, model_id
    )


def position_limit(model_type: str, max_positions: Any) -> Optional[int]:
    if not isinstance(max_positions, int) or max_positions <= 0:
        return None
    if model_type in ("xlm-roberta", "roberta", "camembert"):
        return max_positions - 2  # RoBERTa-style models start positions after the padding index
    return max_positions
