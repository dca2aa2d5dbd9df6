"""The bundled model's tokenizer run by sentencepiece instead of ``tokenizers``: the same ids, a sixth of the memory.

``tokenizers`` keeps XLM-R's 250,002-piece unigram vocabulary as a trie of hash maps: 278 MB resident, the
largest single part of an ingest's peak after the OCR. sentencepiece holds the same pieces in a double
array: 49 MB, loaded in 0.3 s. The model is converted once from the folder's ``tokenizer.json`` (the pieces,
their scores and the normaliser's precompiled map) into ``<folder>-sentencepiece-<hash>/tokenizer.model``.

Measured on 5,520 texts of the bench PDFs and questions: the same ids for every one. A special token's
spelling in a text ("<s>", "<mask>") is that token to ``tokenizers``; it is split out here the same way
(sentencepiece alone would read its characters).
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
import shutil
import struct
from pathlib import Path
from typing import Any, Optional

import numpy as np

from backend.embedding.builds import build_once
from backend.embedding.bundled_tokenizer import METASPACE, pack_charsmap
from backend.errors import EmbeddingError

log = logging.getLogger(__name__)

SUFFIX = "-sentencepiece"
MODEL_FILE = "tokenizer.model"
MARKER = "doclens-sentencepiece.json"
# sentencepiece_model.proto: the piece types
NORMAL, UNKNOWN, CONTROL = 1, 2, 3


class SentencePieceTokens:
    """Token counts and padded, truncated id/mask arrays as ``fast_tokens.FastTokenizer`` gives them
    (``<s>`` text ``</s>``, cut to ``max_seq_length``, padded to a multiple), from several threads at once."""

    def __init__(self, model_file: Path, max_seq_length: int, pad_to_multiple: int, specials: list[dict]) -> None:
        import sentencepiece

        self.processor = sentencepiece.SentencePieceProcessor(model_file=str(model_file))
        self.special_ids = {t["content"]: self.processor.piece_to_id(t["content"]) for t in specials}
        self.specials = _special_pattern(specials)
        self.pad_id, self.bos_id, self.eos_id = (
            self.processor.pad_id(),
            self.processor.bos_id(),
            self.processor.eos_id(),
        )
        self.max_seq_length = max_seq_length
        self.pad_to_multiple = pad_to_multiple

    def token_counts(self, texts: list[str]) -> list[int]:
        """Each text's length in tokens, untruncated and without the special tokens."""
        return [len(ids) for ids in self.encode(texts)]

    def tokenize(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        body = max(0, self.max_seq_length - 2)  # room for <s> and </s>
        rows = [[self.bos_id, *ids[:body], self.eos_id] for ids in self.encode(texts)]
        width = max(len(row) for row in rows)
        width = -(-width // self.pad_to_multiple) * self.pad_to_multiple
        input_ids = np.full((len(rows), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, row in enumerate(rows):
            input_ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        return input_ids, mask

    def encode(self, texts: list[str]) -> list[list[int]]:
        """Each text's ids; the few texts that spell a special token, part by part around it."""
        ids = self.processor.encode(list(texts))
        if self.specials is not None:
            for i, text in enumerate(texts):
                if "<" in text and self.specials.search(text):
                    ids[i] = self._with_specials(text, self.specials)
        return ids

    def _with_specials(self, text: str, specials: re.Pattern) -> list[int]:
        ids: list[int] = []
        start = 0
        for match in specials.finditer(text):
            ids += self.processor.encode(text[start : match.start()]) + [self.special_ids[match.group().strip()]]
            start = match.end()
        return ids + self.processor.encode(text[start:])


def _special_pattern(specials: list[dict]) -> Optional[re.Pattern]:
    """The special tokens' spellings, with the whitespace a token strips on its left or right."""
    if not specials:
        return None
    ordered = sorted(specials, key=lambda t: -len(t["content"]))  # the longest first, as tokenizers matches
    return re.compile(
        "|".join(
            ("\\s*" if t.get("lstrip") else "") + re.escape(t["content"]) + ("\\s*" if t.get("rstrip") else "")
            for t in ordered
        )
    )


def sentencepiece_tokens(model_dir: Path, max_seq_length: int, pad_to_multiple: int) -> Optional[SentencePieceTokens]:
    """sentencepiece for the folder's tokenizer, converted once; None where its tokenizer.json is not a
    unigram model sentencepiece can run as it is (then ``tokenizers`` runs it), or sentencepiece is missing."""
    try:
        import sentencepiece  # noqa: F401 - only whether it is there
    except ImportError:
        return None
    try:
        # named by the tokenizer it came from: a folder rebuilt with another tokenizer gets its own
        digest = hashlib.sha256((model_dir / "tokenizer.json").read_bytes()).hexdigest()[:12]
    except OSError:
        return None
    target = model_dir.parent / f"{model_dir.name}{SUFFIX}-{digest}"
    try:
        folder = build_once(target, MARKER, lambda work: _build_into(work, model_dir), "sentencepiece tokenizer")
    except EmbeddingError as exc:
        log.warning("%s; the tokenizers library reads the vocabulary instead", exc)
        return None
    _remove_older(model_dir, target)
    if not (folder / MODEL_FILE).is_file():  # the tokenizer is not one sentencepiece runs
        return None
    specials = json.loads((folder / MARKER).read_text(encoding="utf-8"))["specials"]
    return SentencePieceTokens(folder / MODEL_FILE, max_seq_length, pad_to_multiple, specials)


def _remove_older(model_dir: Path, current: Path) -> None:
    """Conversions of the folder's earlier tokenizers (a process still using one has read it whole)."""
    for folder in model_dir.parent.glob(f"{model_dir.name}{SUFFIX}-*"):
        if folder != current and (folder / MARKER).is_file():
            shutil.rmtree(folder, ignore_errors=True)


def _build_into(work: Path, model_dir: Path) -> Path:
    out = work / "model"
    out.mkdir()
    tokenizer = json.loads((model_dir / "tokenizer.json").read_text(encoding="utf-8"))
    model = sentencepiece_model(tokenizer)
    if model is not None:
        (out / MODEL_FILE).write_bytes(model)
    specials = [
        {"content": t["content"], "lstrip": bool(t.get("lstrip")), "rstrip": bool(t.get("rstrip"))}
        for t in tokenizer.get("added_tokens") or []
        if t.get("special")
    ]
    marker = {"from": str(model_dir), "converted": model is not None, "specials": specials}
    (out / MARKER).write_text(json.dumps(marker), encoding="utf-8")
    return out


def sentencepiece_model(tokenizer: dict[str, Any]) -> Optional[bytes]:
    """A serialised sentencepiece model giving the ids this tokenizer.json gives: a unigram model, a
    precompiled normaliser (and the collapse of repeated spaces sentencepiece makes anyway), metaspace
    before every word, and <s>, </s>, <pad>. None for anything else."""
    from sentencepiece import sentencepiece_model_pb2

    pb: Any = sentencepiece_model_pb2  # generated protobuf code: no types for mypy

    model = tokenizer.get("model") or {}
    if model.get("type") != "Unigram" or model.get("byte_fallback"):
        return None
    charsmap = _precompiled_charsmap(tokenizer.get("normalizer"))
    vocab = model.get("vocab") or []
    ids = {piece: i for i, (piece, _) in enumerate(vocab)}
    specials = {t["content"] for t in tokenizer.get("added_tokens") or [] if t.get("special")}
    unk = model.get("unk_id")
    if (
        charsmap is None
        or unk is None
        or not _metaspace_words(tokenizer.get("pre_tokenizer"))
        or not {"<s>", "</s>", "<pad>"} <= ids.keys()
    ):
        return None
    proto = pb.ModelProto()
    for i, (piece, score) in enumerate(vocab):
        entry = proto.pieces.add(piece=piece, score=float(score))
        entry.type = UNKNOWN if i == unk else CONTROL if piece in specials else NORMAL
    spec = proto.trainer_spec
    spec.model_type, spec.vocab_size = pb.TrainerSpec.UNIGRAM, len(vocab)
    spec.unk_id, spec.bos_id, spec.eos_id, spec.pad_id = unk, ids["<s>"], ids["</s>"], ids["<pad>"]
    normalizer = proto.normalizer_spec
    normalizer.name, normalizer.precompiled_charsmap = "user_defined", charsmap
    normalizer.add_dummy_prefix = normalizer.remove_extra_whitespaces = normalizer.escape_whitespaces = True
    return bytes(proto.SerializeToString())


def _precompiled_charsmap(normalizer: Optional[dict]) -> Optional[bytes]:
    """The normaliser's map, re-encoded so sentencepiece accepts it (its check wants a trie whose root
    has a non-zero offset; ``tokenizers`` does not check); None for any other normaliser."""
    steps = _steps(normalizer, "normalizers")
    spaces = {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}
    if not steps or steps[0].get("type") != "Precompiled" or any(s != spaces for s in steps[1:]):
        return None
    return _reencoded(base64.b64decode(steps[0]["precompiled_charsmap"]))


def _reencoded(charsmap: bytes) -> bytes:
    """Walk the darts-clone trie of ``charsmap`` for its keys, then encode them again."""
    size = struct.unpack("<I", charsmap[:4])[0]
    units = struct.unpack(f"<{size // 4}I", charsmap[4 : 4 + size])
    keys: dict[bytes, int] = {}
    pending: list[tuple[int, bytes]] = [(0, b"")]
    while pending:
        position, key = pending.pop()
        unit = units[position]
        base = position ^ ((unit >> 10) << ((unit & (1 << 9)) >> 6))
        if (unit >> 8) & 1:  # has a leaf: the value sits in the label-0 child
            keys[key] = units[base] & 0x7FFFFFFF
        for byte in range(1, 256):
            child = base ^ byte
            if child < len(units) and units[child] & ((1 << 31) | 0xFF) == byte:
                pending.append((child, key + bytes([byte])))
    return pack_charsmap(keys, charsmap[4 + size :])


def _metaspace_words(pre_tokenizer: Optional[dict]) -> bool:
    """Words split at whitespace, each led by ▁: what sentencepiece does to its normalised text. Without
    the split, a trailing space would be a token of its own ("▁") where sentencepiece drops it."""
    steps = _steps(pre_tokenizer, "pretokenizers")
    if [step.get("type") for step in steps] != ["WhitespaceSplit", "Metaspace"]:
        return False
    metaspace = [step for step in steps if step["type"] == "Metaspace"]
    return (
        len(metaspace) == 1
        and metaspace[0].get("replacement") == METASPACE
        and metaspace[0].get("prepend_scheme", "always") == "always"
    )


def _steps(component: Optional[dict], key: str) -> list[dict]:
    """A normaliser's or pre-tokenizer's steps: those of a Sequence, else the one."""
    if not component:
        return []
    steps = component.get(key) if component.get("type") == "Sequence" else [component]
    return [step for step in steps or [] if isinstance(step, dict)]
