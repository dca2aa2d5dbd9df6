"""The bundled model in int8 on ONNX Runtime (``embedding.int8_runtime: onnxruntime``, opt-in): ONNX Runtime's
integer kernels on plain AVX2/AVX-512, where OpenVINO's int8 is slow. Not the default: its dense hit@5 is
0.006-0.007 below float32's (docs/benchmarks.md).

The sentence-transformers folder is exported once (``torch.onnx``), its attention, LayerNorm and GELU fused
by onnxruntime's transformer optimizer (unfused int8 gains little), and its matrix weights quantized to int8
per output channel, activations on the fly. The weights use 7 bits (``reduce_range``): the AVX2 kernel's
u8*s8 pair products (``vpmaddubsw``) saturate int16 with 8-bit weights, never with 7, so a CPU without VNNI
computes exactly what one with VNNI does. The word embedding table stays float32 (quantizing it costs
accuracy and saves no time). The result lands atomically in ``<model folder>-ort<version>-int8/`` next to
the model it came from (a new ONNX Runtime builds its own), its weights in a file beside the graph, which
ONNX Runtime maps instead of copying: a load peaks at 0.4 GB instead of 0.8 and takes a third of the time.
"""

from __future__ import annotations

import io
import json
import logging
import shutil
import time
import warnings
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from backend.cpu import usable_cpus
from backend.embedding.base import E5_PROMPTS, BatchedEmbedder, Kind, log_loaded
from backend.embedding.builds import build_once, report_step
from backend.embedding.bundled import bundled_folder_and_length
from backend.embedding.fast_tokens import mean_pooled, tokenizer_for
from backend.errors import EmbeddingError
from backend.settings import Settings

log = logging.getLogger(__name__)

ORT_MARKER = "doclens-onnxruntime.json"
MODEL_FILE = "model.onnx"
WEIGHTS_FILE = "model.onnx.data"  # the quantizer names the external data file after the model
INPUT_NAMES = ("input_ids", "attention_mask")
OUTPUT_NAME = "last_hidden_state"
EXPORT_OPSET = 17
MS_DOMAIN = "com.microsoft"  # ONNX Runtime's own operators (Attention, EmbedLayerNormalization, ...)
BUILD = "onnxruntime"  # the build's name in progress reports (see preparation.BUILD_WEIGHTS)
# Where each build step starts, as a share of the build (measured on 2 cores at load 13: export 121 s, fusion
# 64 s, quantization 90 s of wall time, for 22 s of CPU time; at load 7 the whole build took 40 s)
ORT_STEPS = {"export": 0.0, "fuse": 0.4, "quantize": 0.7}
# ONNX Runtime needs no padding for speed; 8 tokens keep a few shapes for its buffer arena to reuse.
PAD_TO_MULTIPLE = 8


def runtime_version() -> str:
    try:
        return metadata.version("onnxruntime")
    except metadata.PackageNotFoundError:
        raise EmbeddingError("int8 embeddings on ONNX Runtime need the onnxruntime package") from None


def ort_model_dir(model_dir: Path) -> Path:
    """Keyed by the weights (the bundled folder's name holds their hash) and the runtime's version."""
    return model_dir.parent / f"{model_dir.name}-ort{runtime_version()}-int8"


def ensure_ort_model(model_dir: Path) -> Path:
    """The int8 ONNX folder for this sentence-transformers folder, built first if needed."""
    target = ort_model_dir(model_dir)
    folder = build_once(target, ORT_MARKER, lambda work: _build_into(work, model_dir), "int8 embedding model")
    for older in model_dir.parent.glob(f"{model_dir.name}-ort*-int8"):  # other runtime versions' builds
        if older != target:
            shutil.rmtree(older, ignore_errors=True)
    return folder


# ----------------------------------------------------------------------------------------------
# Building it once: export, fuse, quantize, in memory
# ----------------------------------------------------------------------------------------------


def _build_into(work: Path, model_dir: Path) -> Path:
    started = time.monotonic()
    log.info("Preparing the int8 ONNX Runtime version of %s (once, about half a minute)", model_dir.name)
    out = work / "model"
    out.mkdir()
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    report_step(BUILD, "export", ORT_STEPS["export"])
    exported = _export(model_dir)
    report_step(BUILD, "fuse", ORT_STEPS["fuse"])
    fused = _fuse(exported, config)
    report_step(BUILD, "quantize", ORT_STEPS["quantize"])
    _quantize(fused, out / MODEL_FILE)
    marker = {
        "source": model_dir.name,
        "built_at": time.time(),
        "onnxruntime": runtime_version(),
        "opset": EXPORT_OPSET,
        "quantization": "dynamic int8, per-channel 7-bit weights (reduce_range), float32 word embeddings",
    }
    (out / ORT_MARKER).write_text(json.dumps(marker, indent=2), encoding="utf-8")
    log.info("int8 embedding model (ONNX Runtime) ready in %.1f s", time.monotonic() - started)
    report_step(BUILD, "done", 1.0)
    return out


def _export(model_dir: Path) -> Any:
    import onnx
    import torch
    from transformers import AutoModel

    # Eager attention exports as the MatMul/Softmax pattern the optimizer knows how to fuse.
    model = AutoModel.from_pretrained(
        str(model_dir), dtype=torch.float32, attn_implementation="eager", local_files_only=True
    ).eval()

    class LastHiddenState(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            segments = torch.zeros_like(input_ids)  # single-segment texts
            return self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=segments)[0]

    example = torch.ones((2, 16), dtype=torch.long)
    axes = {name: {0: "batch", 1: "tokens"} for name in (*INPUT_NAMES, OUTPUT_NAME)}
    buffer = io.BytesIO()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer chatter about Python control flow, harmless here
        torch.onnx.export(
            LastHiddenState(model),
            (example, example),
            buffer,  # type: ignore[arg-type]  # the legacy exporter writes to any file object
            input_names=list(INPUT_NAMES),
            output_names=[OUTPUT_NAME],
            dynamic_axes=axes,
            opset_version=EXPORT_OPSET,
            dynamo=False,
        )
    return onnx.load_from_string(buffer.getvalue())


def _fuse(exported: Any, config: dict) -> Any:
    import onnx
    from onnxruntime.transformers import optimizer

    model = optimizer.optimize_model(
        exported,
        model_type="bert",
        opt_level=0,  # the Python fusions only: ONNX Runtime optimizes the rest when it loads the model
        num_heads=int(config["num_attention_heads"]),
        hidden_size=int(config["hidden_size"]),
    )
    fused = model.get_fused_operator_statistics().get("Attention", 0)
    layers = int(config["num_hidden_layers"])
    if fused != layers:
        raise EmbeddingError(f"only {fused} of {layers} attention layers could be fused")
    if not any(op.domain == MS_DOMAIN for op in model.model.opset_import):  # the fused ops' domain
        model.model.opset_import.append(onnx.helper.make_opsetid(MS_DOMAIN, 1))
    return model.model


def _quantize(fused: Any, out: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    level = root.level
    root.setLevel(max(level, logging.ERROR))  # it logs advice to pre-process the model, on the root logger
    try:
        quantize_dynamic(
            fused,
            str(out),
            weight_type=QuantType.QInt8,
            per_channel=True,
            reduce_range=True,
            op_types_to_quantize=["MatMul", "Attention"],
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
            use_external_data_format=True,  # MODEL_FILE + WEIGHTS_FILE
        )
    finally:
        root.setLevel(level)


# ----------------------------------------------------------------------------------------------
# Running it
# ----------------------------------------------------------------------------------------------


class OnnxInt8Embedder(BatchedEmbedder):
    """The bundled model quantized to int8 on ONNX Runtime, with the e5 prompts."""

    def __init__(self, runner: OnnxInt8Runner, model_id: str, batch_size: int) -> None:
        super().__init__(model_id, runner.dim, batch_size)
        self.runner = runner

    @classmethod
    def load(cls, settings: Settings, model_id: str) -> OnnxInt8Embedder:
        started = time.monotonic()
        model_dir, length = bundled_folder_and_length(settings, model_id)
        runner = OnnxInt8Runner(ensure_ort_model(model_dir), model_dir, length, usable_cpus())
        embedder = cls(runner, model_id, settings.embedding.batch_size)
        log_loaded(model_id, started, f"int8, ONNX Runtime, {embedder.dim} dims, {runner.threads} threads")
        return embedder

    def _sort_lengths(self, texts: list[str]) -> list[int]:
        return self.runner.tokens.token_counts(texts)

    def _embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        prompt = E5_PROMPTS[kind]
        return self.runner.embed([prompt + text for text in texts])


class OnnxInt8Runner:
    """Tokenizer + ONNX Runtime session + mean pooling, the same steps sentence-transformers takes. A
    session runs calls from several threads at once, so a question never waits for an upload's batch."""

    def __init__(self, folder: Path, tokenizer_dir: Path, max_seq_length: int, threads: int) -> None:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise EmbeddingError(f"int8 embeddings on ONNX Runtime need the onnxruntime package ({exc})") from None
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only
        # Idle pool threads sleep instead of spinning: the cores are shared with OCR workers and the read-ahead
        # parser (8 passages of 120 tokens on 2 busy cores: 8.5 instead of 6.1 a second; a question 20 ms, not 33).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self.session = ort.InferenceSession(str(folder / MODEL_FILE), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
            raise EmbeddingError(f"int8 embedding model in {folder} could not be loaded: {exc}") from exc
        self.tokens = tokenizer_for(tokenizer_dir, max_seq_length, PAD_TO_MULTIPLE)
        self.threads = threads
        self.dim = int(self.session.get_outputs()[0].shape[-1])

    def embed(self, texts: list[str]) -> np.ndarray:
        input_ids, mask = self.tokens.tokenize(texts)
        hidden = self.session.run([OUTPUT_NAME], dict(zip(INPUT_NAMES, (input_ids, mask))))[0]
        return mean_pooled(hidden, mask)
