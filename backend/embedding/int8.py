"""The bundled model in int8 on OpenVINO (``embedding.dtype: int8``, or ``auto`` on CPUs with VNNI): on such a CPU
about 2x the speed of bfloat16 torch: on a CPU with VNNI about 2x the speed of bfloat16 torch
(1.5x an ONNX Runtime int8 build), with the same tokenizer, prompts and mean pooling, and cosine ~0.998 to the
float32 vectors.

The sentence-transformers folder is converted once to OpenVINO, and NNCF quantizes its linear layers to
int8. NNCF calibrates the activation ranges on ``assets/embedding-calibration.jsonl``, original passages in
Chinese and English of the kinds PDFs hold, so every machine builds the same model; the statistics it collects
on them ship beside them (``int8_calibration``), so a first start does not run the model to collect them.
Attention stays in bfloat16/float32. The result lands atomically in ``<model folder>-openvino-int8/`` next to the model it
came from, like the bundled build itself.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import threading
import time
import warnings
from collections import deque
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from backend.cpu import has_any_flag, let_questions_pass, usable_cpus
from backend.embedding.base import (
    E5_PASSAGE_PROMPT,
    E5_QUERY_PROMPT,
    BatchedEmbedder,
    Kind,
    log_loaded,
)
from backend.embedding.builds import build_once, report_step
from backend.embedding.bundled import bundled_folder_and_length, bundled_model_dir, hf_offline
from backend.embedding.fast_tokens import mean_pooled, tokenizer_for
from backend.embedding.int8_calibration import (
    FLOAT_LAYERS_PATTERN,
    INPUT_NAMES,
    model_inputs,
    quantized,
    write_statistics,
)
from backend.errors import EmbeddingError
from backend.settings import Settings

log = logging.getLogger(__name__)

INT8_SUFFIX = "-openvino-int8"
SUPERSEDED_SUFFIX = "-onnx-int8"
INT8_MARKER = "doclens-openvino.json"
MODEL_FILE = "model.xml"
# Where each build step starts, as a share of the build (2 cores, quiet, with the shipped statistics: export
# 9 s, quantization 9 s, saving 2 s; collecting the statistics instead adds about 35 s to the quantization)
INT8_STEPS = {"quantize": 0.45, "save": 0.9}
WEIGHTS_FILE = "model.bin"  # written by openvino.save_model beside MODEL_FILE
EMBEDS_INPUT = "inputs_embeds"  # the looked-up word embeddings, see EmbeddingTable
# int8 matrix products are only fast (and free of the AVX2 u8*s8 saturation) with VNNI or AMX.
CPU_INT8_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")
MAX_STREAMS = 2  # batches of passages embedded side by side (see _compiled)
# OpenVINO prepares kernels for each new input shape (~40 ms each); rounding lengths up to a multiple of
# 16 lets batches share shapes, for a few percent of padding.
PAD_TO_MULTIPLE = 16
# OpenVINO's CPU plugin (2026.4 on AMX) computes inputs padded to exactly 32 tokens wrongly (cosine 0.96 to
# float32, against 0.998 at every other length): such batches are padded to 48 instead.
AVOIDED_LENGTHS = {32: 48}


def cpu_supports_int8() -> bool:
    return has_any_flag(*CPU_INT8_FLAGS)


# ----------------------------------------------------------------------------------------------
# Building the int8 model once
# ----------------------------------------------------------------------------------------------


def int8_model_dir(model_dir: Path) -> Path:
    return model_dir.parent / f"{model_dir.name}{INT8_SUFFIX}"


def ensure_int8_model(model_dir: Path, prompts: tuple[str, str]) -> Path:
    """The int8 OpenVINO folder for this sentence-transformers folder, built first if needed.

    ``prompts`` are the (query, passage) prefixes the model is used with, for calibration."""
    target = int8_model_dir(model_dir)
    folder = build_once(target, INT8_MARKER, lambda work: _build_into(work, model_dir, prompts), "int8 embedding model")
    # Earlier versions kept an ONNX Runtime int8 model beside it; this one replaces it.
    shutil.rmtree(model_dir.parent / f"{model_dir.name}{SUPERSEDED_SUFFIX}", ignore_errors=True)
    return folder


def import_builder_if_needed(settings: Settings) -> None:
    """On a first start, import what the int8 build runs (torch, transformers, NNCF: 3-4 s of one core)
    in the background while the bundled folder is built on the other."""
    if (int8_model_dir(bundled_model_dir(settings.model_cache_dir)) / INT8_MARKER).is_file():
        return
    import safetensors.numpy  # noqa: F401 - what the bundled build imports, imported before the thread starts
    import tokenizers  # noqa: F401

    threading.Thread(target=_import_builder, name="int8-build-imports", daemon=True).start()


def _import_builder() -> None:
    try:
        with telemetry_off():
            import nncf  # noqa: F401
            import openvino  # noqa: F401
            import torch  # noqa: F401
            from transformers import AutoModel  # noqa: F401
    except Exception:  # noqa: BLE001 - the build imports them again and reports what is wrong
        log.debug("importing the int8 builder ahead of time failed", exc_info=True)


@contextlib.contextmanager
def telemetry_off() -> Iterator[None]:
    """OpenVINO and NNCF send usage events to Google Analytics, and write a client id under ~/intel, unless
    they believe they run in CI: they check the CI variable each time one of their tools starts (importing
    openvino is one). Nothing about a user's documents is theirs to count."""
    with _TELEMETRY_LOCK:
        saved = os.environ.get("CI")
        os.environ["CI"] = "true"
        try:
            yield
        finally:
            if saved is None:
                os.environ.pop("CI", None)
            else:
                os.environ["CI"] = saved


_TELEMETRY_LOCK = threading.RLock()


def _build_into(work: Path, model_dir: Path, prompts: tuple[str, str]) -> Path:
    started = time.monotonic()
    log.info("Preparing the int8 OpenVINO version of %s (once, about half a minute)", model_dir.name)
    out = work / "model"
    out.mkdir()
    with telemetry_off():
        import openvino as ov

        report_step("int8", "export", 0.0)
        converted = convert_model(model_dir)
        report_step("int8", "quantize", INT8_STEPS["quantize"])
        model = quantized(converted, model_dir, prompts)  # with the shipped statistics: no model runs
        report_step("int8", "save", INT8_STEPS["save"])
        ov.save_model(model, str(out / MODEL_FILE))
    marker = {
        "source": model_dir.name,
        "built_at": time.time(),
        "openvino": ov.__version__,
        "quantization": "int8 (NNCF), symmetric per-channel weights, calibrated activations",
        "float_layers": FLOAT_LAYERS_PATTERN,
    }
    (out / INT8_MARKER).write_text(json.dumps(marker, indent=2), encoding="utf-8")
    log.info("int8 embedding model ready in %.1f s", time.monotonic() - started)
    report_step("int8", "done", 1.0)
    return out


def convert_model(model_dir: Path) -> Any:
    import openvino as ov
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(model_dir), dtype=torch.float32, local_files_only=True).eval()

    class LastHiddenState(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    example = torch.ones((2, 16), dtype=torch.long)
    inputs = dict(zip(INPUT_NAMES, (example, example, torch.zeros_like(example))))
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer chatter about Python control flow, harmless here
        return ov.convert_model(LastHiddenState(model), example_input=inputs)


# ----------------------------------------------------------------------------------------------
# Running it
# ----------------------------------------------------------------------------------------------


class Int8Embedder(BatchedEmbedder):
    """The bundled model quantized to int8, with the e5 prompts."""

    def __init__(self, runner: Int8Runner, model_id: str, batch_size: int) -> None:
        super().__init__(model_id, runner.dim, batch_size)
        self.runner = runner
        self.prompts = {"query": E5_QUERY_PROMPT, "passage": E5_PASSAGE_PROMPT}

    @classmethod
    def load(cls, settings: Settings, model_id: str) -> Int8Embedder:
        started = time.monotonic()
        import_builder_if_needed(settings)
        folder, length = bundled_folder_and_length(settings, model_id)
        threads = usable_cpus()
        with hf_offline():
            runner = Int8Runner(folder, (E5_QUERY_PROMPT, E5_PASSAGE_PROMPT), length, threads)
        embedder = cls(runner, model_id, settings.embedding.batch_size)
        log_loaded(model_id, started, f"int8, OpenVINO, {embedder.dim} dims, {threads} threads")
        return embedder

    def _sort_lengths(self, texts: list[str]) -> list[int]:
        return self.runner.token_counts(texts)

    def _embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        prompt = self.prompts[kind]
        return self.runner.embed([prompt + text for text in texts])

    def _embed_batches(self, batches: list[list[str]], kind: Kind) -> Iterator[np.ndarray]:
        """Each batch split between the streams, its parts run side by side (see Int8Runner.embed_many).
        Questions stay on the question's own request: the streams may be an upload's for minutes."""
        if kind == "query":
            yield from (self._embed_batch(batch, kind) for batch in batches)
            return
        prompt = self.prompts[kind]
        parts = [_split(batch, self.runner.streams) for batch in batches]
        vectors = self.runner.embed_many([[prompt + text for text in part] for split in parts for part in split])
        for split in parts:
            yield np.vstack([next(vectors) for _ in split])


class Int8Runner:
    """Tokenizer + OpenVINO model + mean pooling, the same steps sentence-transformers takes.

    Memory (an ingest's peak holds this model and the OCR together): the tokenizer is sentencepiece's (see
    fast_tokens: 49 MB where ``tokenizers`` takes 278), and the word embedding table is looked up here, from
    the int8 weights the model file maps, instead of by the compiled model, which would unpack all 250,037
    rows to float32 (~0.4 GB) for the few a batch uses.
    """

    def __init__(self, model_dir: Path, prompts: tuple[str, str], max_seq_length: int, threads: int) -> None:
        folder = ensure_int8_model(model_dir, prompts)  # outside telemetry_off: builds take that lock too
        self.streams = min(MAX_STREAMS, threads)
        with telemetry_off():
            self.model, self.table = _compiled(folder, threads, self.streams)
        self.requests = [self.model.create_infer_request() for _ in range(self.streams)]
        self.query_request = self.model.create_infer_request()  # a search never waits for an upload's batches
        self.tokens = tokenizer_for(model_dir, max_seq_length, PAD_TO_MULTIPLE)
        self.pad_id = self.tokens.pad_id
        self.max_seq_length = max_seq_length
        self.dim = int(self.model.outputs[0].get_partial_shape()[-1].get_length())
        # An infer request runs one batch at a time: one lock for the question request, one for the streams'.
        self._query_lock = threading.Lock()
        self._batches_lock = threading.Lock()

    def token_counts(self, texts: list[str]) -> list[int]:
        return self.tokens.token_counts(texts)

    def embed(self, texts: list[str]) -> np.ndarray:
        """One batch (a question) on a request of its own."""
        feed, mask = self._feed(texts)
        with self._query_lock:
            self.query_request.infer(feed)
            return _mean_pooled(self.query_request, mask)

    def embed_many(self, batches: list[list[str]]) -> Iterator[np.ndarray]:
        """Each batch's mean-pooled vectors, in order, with up to one batch in flight per stream."""
        if len(batches) == 1:
            yield self.embed(batches[0])
            return
        with self._batches_lock:
            in_flight: deque[tuple[Any, np.ndarray]] = deque()
            for k, texts in enumerate(batches):
                if len(in_flight) == self.streams:
                    yield _finished(*in_flight.popleft())
                let_questions_pass()
                feed, mask = self._feed(texts)
                request = self.requests[k % self.streams]
                request.start_async(feed)
                in_flight.append((request, mask))
            while in_flight:
                yield _finished(*in_flight.popleft())

    def _feed(self, texts: list[str]) -> tuple[dict[str, np.ndarray], np.ndarray]:
        input_ids, mask = self._tokenize(texts)
        feed = model_inputs(input_ids, mask)
        feed[EMBEDS_INPUT] = self.table.lookup(input_ids)
        return feed, mask

    def _tokenize(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        return self._avoid_bad_lengths(*self.tokens.tokenize(texts))

    def _avoid_bad_lengths(self, input_ids: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pad further, with masked pad tokens, when the batch length is one OpenVINO gets wrong."""
        length = int(input_ids.shape[1])
        extra = min(AVOIDED_LENGTHS.get(length, length), self.max_seq_length) - length
        if extra <= 0:
            return input_ids, mask
        return (
            np.pad(input_ids, ((0, 0), (0, extra)), constant_values=self.pad_id),
            np.pad(mask, ((0, 0), (0, extra)), constant_values=0),
        )


def _split(batch: list[str], parts: int) -> list[list[str]]:
    size = -(-len(batch) // parts)
    return [batch[start : start + size] for start in range(0, len(batch), size)]


def _finished(request: Any, mask: np.ndarray) -> np.ndarray:
    request.wait()
    return _mean_pooled(request, mask)


def _mean_pooled(request: Any, mask: np.ndarray) -> np.ndarray:
    return mean_pooled(request.get_output_tensor(0).data.copy(), mask)


class EmbeddingTable:
    """The word embedding rows as the model file stores them (int8, one float scale per row), mapped
    from the file, not copied: a lookup touches only the rows of the batch's tokens."""

    def __init__(self, weights: np.ndarray, scales: np.ndarray, owner: Any) -> None:
        self.weights = weights
        self.scales = scales
        self._owner = owner  # the OpenVINO constant whose mapped file buffer the arrays view

    def lookup(self, input_ids: np.ndarray) -> np.ndarray:
        # The same float32 product the compiled model folded (Convert, then Multiply by the row's scale).
        return self.weights[input_ids].astype(np.float32) * self.scales[input_ids]


def _compiled(folder: Path, threads: int, streams: int) -> tuple[Any, EmbeddingTable]:
    try:
        import openvino as ov
    except ImportError as exc:
        raise EmbeddingError(f"int8 embeddings need the openvino package ({exc})") from None
    try:
        core = ov.Core()
        model, table = _without_embedding_lookup(core.read_model(str(folder / MODEL_FILE)))
        # Streams: a batch of passages is too small to keep two cores busy; two batches side by side, one
        # per core, embed 1.4x the passages per second (978 dev chunks: 18.4 -> 12.9 s on 2 cores). A lone
        # question on one core takes 11.6 instead of 8.5 ms. Unpinned threads: the cores are shared with OCR
        # workers and the read-ahead parser.
        config: dict[str, Any] = {"INFERENCE_NUM_THREADS": threads, "ENABLE_CPU_PINNING": False}
        if streams > 1:
            config.update({"PERFORMANCE_HINT": "THROUGHPUT", "NUM_STREAMS": streams})
        else:
            config["PERFORMANCE_HINT"] = "LATENCY"
        return core.compile_model(model, "CPU", config), table
    except RuntimeError as exc:
        raise EmbeddingError(f"int8 embedding model in {folder} could not be loaded: {exc}") from exc


def _without_embedding_lookup(model: Any) -> tuple[Any, EmbeddingTable]:
    """The model with its word embedding Gather replaced by an input (EMBEDS_INPUT), and the table it
    read: Gather(Multiply(Convert(int8 constant), scales), ids)."""
    import openvino as ov

    gather = next(
        (
            op
            for op in model.get_ordered_ops()
            if op.get_type_name() == "Gather" and "word_embeddings" in op.get_friendly_name()
        ),
        None,
    )
    if gather is None:
        raise RuntimeError("no word embedding Gather in the model")
    multiply = gather.input_value(0).get_node()
    convert = multiply.input_value(0).get_node()
    weights, scales = convert.input_value(0).get_node(), multiply.input_value(1).get_node()
    if (multiply.get_type_name(), convert.get_type_name(), weights.get_type_name(), scales.get_type_name()) != (
        "Multiply",
        "Convert",
        "Constant",
        "Constant",
    ):
        raise RuntimeError("the word embedding table is not an int8 constant with row scales")
    embeds = ov.op.Parameter(ov.Type.f32, gather.get_output_partial_shape(0))
    embeds.set_friendly_name(EMBEDS_INPUT)
    gather.output(0).replace(embeds.output(0))
    embeds.output(0).get_tensor().set_names({EMBEDS_INPUT})
    table = EmbeddingTable(weights.data, scales.data, weights)
    return ov.Model(model.get_results(), list(model.get_parameters()) + [embeds], model.get_friendly_name()), table


def write_calibration_statistics(model_dir: Path, prompts: tuple[str, str]) -> Path:
    """The shipped calibration statistics written again for the bundled model (``int8_calibration``)."""
    with telemetry_off():
        return write_statistics(convert_model(model_dir), model_dir, prompts)


if __name__ == "__main__":  # python -m backend.embedding.int8: after changing the calibration texts or prompts
    from backend.embedding.bundled import ensure_bundled_model
    from backend.settings import load_settings

    logging.basicConfig(level=logging.INFO)
    write_calibration_statistics(
        ensure_bundled_model(load_settings().model_cache_dir), (E5_QUERY_PROMPT, E5_PASSAGE_PROMPT)
    )
