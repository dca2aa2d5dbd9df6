"""The bundled model's tokenizer as the int8 runtimes use it: sentencepiece where it runs the folder's
tokenizer (see sentencepiece_tokens), else the ``tokenizers`` one that transformers wraps (whose import pulls
in torch, ~0.4 GB, for nothing here), each giving what transformers would; and the mean pooling
sentence-transformers applies to the model's output."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np

from backend.embedding.sentencepiece_tokens import SentencePieceTokens, sentencepiece_tokens


def tokenizer_for(model_dir: Path, max_seq_length: int, pad_to_multiple: int) -> FastTokenizer | SentencePieceTokens:
    """sentencepiece where it gives the folder's tokenizer's ids (a sixth of the memory), else tokenizers."""
    return sentencepiece_tokens(model_dir, max_seq_length, pad_to_multiple) or FastTokenizer(
        model_dir, max_seq_length, pad_to_multiple
    )


class FastTokenizer:
    """Token counts and padded, truncated id/mask arrays, from several threads at once."""

    def __init__(self, model_dir: Path, max_seq_length: int, pad_to_multiple: int) -> None:
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.pad_id = self.tokenizer.token_to_id(_pad_token(model_dir)) or 0
        self.max_seq_length = max_seq_length
        self.pad_to_multiple = pad_to_multiple
        self._lock = threading.Lock()  # truncation and padding are set per call: not re-entrant

    def token_counts(self, texts: list[str]) -> list[int]:
        """Each text's length in tokens, untruncated and without the special tokens."""
        with self._lock:
            self.tokenizer.no_truncation()
            self.tokenizer.no_padding()
            return [len(e.ids) for e in self.tokenizer.encode_batch(texts, add_special_tokens=False)]

    def tokenize(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """What transformers' fast tokenizer gives for padding=True, truncation=True, max_length and
        pad_to_multiple_of (it sets these same options on this same tokenizer), as int64 arrays."""
        with self._lock:
            self.tokenizer.enable_truncation(self.max_seq_length)
            self.tokenizer.enable_padding(
                pad_id=self.pad_id,
                pad_token=self.tokenizer.id_to_token(self.pad_id),
                pad_to_multiple_of=self.pad_to_multiple,
            )
            encoded = self.tokenizer.encode_batch(texts)
        input_ids = np.asarray([e.ids for e in encoded], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encoded], dtype=np.int64)
        return input_ids, mask


def mean_pooled(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The mean of each text's token vectors, padding left out (sentence-transformers' pooling)."""
    weights = mask[..., None].astype(np.float32)
    return (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)


def _pad_token(model_dir: Path) -> str:
    config = model_dir / "tokenizer_config.json"
    if config.is_file():
        return str(json.loads(config.read_text(encoding="utf-8")).get("pad_token") or "<pad>")
    return "<pad>"
