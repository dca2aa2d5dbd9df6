"""The bundled model in int8 on ONNX Runtime: built once next to the model (keyed by the runtime's version),
pointing where float32 points on real texts; opt-in (``int8_runtime: onnxruntime``), auto keeps OpenVINO with
VNNI and takes the 4-bit weights (onnxruntime-q4) without."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from backend.embedding import Embedder, create_embedder, resolve_dtype
from backend.embedding.bundled import bundled_model_dir
from backend.embedding.factory import resolve_int8_runtime
from backend.embedding.int8 import cpu_supports_int8
from backend.embedding.onnx_int8 import (
    MODEL_FILE,
    ORT_MARKER,
    WEIGHTS_FILE,
    OnnxInt8Embedder,
    ensure_ort_model,
    ort_model_dir,
)
from backend.embedding.preparation import build_plan
from backend.errors import EmbeddingError
from tests.backend.embedding.conftest import TEXTS as SHARED_TEXTS
from tests.backend.embedding.conftest import batched_and_alone, left_behind
from tests.conftest import MODEL_CACHE, make_settings

# Real texts with the odd ones added: full-width forms, a URL, an emoji and a text longer than the model reads.
TEXTS = SHARED_TEXTS + [
    "ｆｕｌｌ　ｗｉｄｔｈ ＡＢＣ１２３ and https://example.org/a_b-c?d=e&f=g#h 🙂",
    "Transformer-based encoders (e.g., BERT, XLM-R) achieve F1 = 92.4 ± 0.3 on SQuAD v1.1; see Table 3." * 12,
]
# No real text: 512 times one token. Activations are quantized with one range per batch, and this one's
# stand far from its batch-mates' (0.985 alone, 0.975 in a batch with the texts above).
ONE_TOKEN_RUN = "x" * 3000
QUERIES = ["长城有多长？", "At what temperature does water boil?", "2023年营业收入是多少？"]


@pytest.fixture(scope="module")
def ort(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    settings = make_settings(
        tmp_path_factory.mktemp("data"), DOCLENS_EMBEDDING_DTYPE="int8", DOCLENS_EMBEDDING_INT8_RUNTIME="onnxruntime"
    )
    return create_embedder(settings)


@pytest.fixture(scope="module")
def f32(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    return create_embedder(make_settings(tmp_path_factory.mktemp("data"), DOCLENS_EMBEDDING_DTYPE="float32"))


def test_the_model_is_built_once_next_to_the_bundled_model(ort: Embedder) -> None:
    assert isinstance(ort, OnnxInt8Embedder)
    assert ort.model_id == "bundled:multilingual-e5-small" and ort.dim == 384  # KBs cannot tell it from float32
    folder = ort_model_dir(bundled_model_dir(MODEL_CACHE))
    assert "-ort1." in folder.name  # a new runtime builds its own
    assert (folder / ORT_MARKER).is_file() and (folder / WEIGHTS_FILE).stat().st_size > 100_000_000
    assert not left_behind(MODEL_CACHE, folder), "a temporary build folder was left behind"
    built = (folder / MODEL_FILE).stat().st_ino
    assert ensure_ort_model(bundled_model_dir(MODEL_CACHE)) == folder
    assert (folder / MODEL_FILE).stat().st_ino == built  # reused, not rebuilt


def test_vectors_point_where_float32_points(ort: Embedder, f32: Embedder) -> None:
    passages = ort.embed_passages(TEXTS + [ONE_TOKEN_RUN])
    assert passages.dtype == np.float32 and passages.shape == (len(TEXTS) + 1, 384)
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-4)
    cosines = np.sum(passages * f32.embed_passages(TEXTS + [ONE_TOKEN_RUN]), axis=1)
    assert cosines[:-1].min() > 0.99 and cosines[-1] > 0.96
    assert np.sum(ort.embed_queries(QUERIES) * f32.embed_queries(QUERIES), axis=1).min() > 0.98


def test_search_prefers_the_right_passage(ort: Embedder) -> None:
    passages = ort.embed_passages(TEXTS[:3])
    assert [int(np.argmax(passages @ q)) for q in ort.embed_queries(QUERIES)] == [0, 1, 2]


def test_a_vector_does_not_depend_on_its_batch(tmp_path: Path, ort: Embedder) -> None:
    env = {"DOCLENS_EMBEDDING_DTYPE": "int8", "DOCLENS_EMBEDDING_INT8_RUNTIME": "onnxruntime"}
    # Activations are quantized per batch: a padded neighbour may move a vector a little, never its direction.
    assert batched_and_alone(tmp_path, ort, TEXTS, 3, **env) > 0.995


def test_questions_and_passages_embed_from_several_threads_at_once(ort: Embedder) -> None:
    expected = ort.embed_queries(QUERIES[:1])
    errors: list[BaseException] = []
    results: list[np.ndarray] = []

    def work(kind: str) -> None:
        try:
            for _ in range(3):
                if kind == "query":
                    results.append(ort.embed_queries(QUERIES[:1]))
                else:
                    ort.embed_passages(TEXTS[:4])
        except BaseException as exc:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(kind,)) for kind in ("query", "passage", "passage")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert all(float(r[0] @ expected[0]) > 0.9999 for r in results)


def test_auto_picks_openvino_with_vnni_and_the_4bit_weights_without(monkeypatch: pytest.MonkeyPatch) -> None:
    import backend.embedding.factory as factory

    for vnni, runtime, dtype in ((False, "onnxruntime-q4", ("int8",)), (True, "openvino", ("int8",))):
        monkeypatch.setattr(factory, "cpu_supports_int8", lambda vnni=vnni: vnni)
        assert resolve_int8_runtime("auto") == runtime
        assert resolve_dtype("auto", "bundled:multilingual-e5-small") in dtype
        assert resolve_dtype("auto", "bundled:multilingual-e5-small", "onnxruntime") == "int8"
    assert resolve_int8_runtime("onnxruntime") == "onnxruntime" and resolve_int8_runtime("none") is None
    assert resolve_dtype("auto", "bundled:multilingual-e5-small", "none") in ("bfloat16", "float32")
    assert resolve_dtype("auto", "BAAI/bge-small-zh-v1.5") in ("bfloat16", "float32")


def test_int8_without_a_runtime_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="int8_runtime"):
        create_embedder(make_settings(tmp_path, DOCLENS_EMBEDDING_DTYPE="int8", DOCLENS_EMBEDDING_INT8_RUNTIME="none"))


def test_first_start_plans_the_build_of_the_chosen_runtime(tmp_path: Path) -> None:
    auto = make_settings(tmp_path)
    assert build_plan(auto) == (("bundled", "int8") if cpu_supports_int8() else ("q4",))
    ort = make_settings(tmp_path, DOCLENS_EMBEDDING_INT8_RUNTIME="onnxruntime")
    assert build_plan(ort) == ("bundled", "onnxruntime")
    assert build_plan(make_settings(tmp_path, DOCLENS_EMBEDDING_INT8_RUNTIME="none")) == ("bundled",)


def test_every_build_step_has_words_for_the_banner() -> None:
    from backend.embedding.onnx_int8 import BUILD, ORT_STEPS
    from ui.app import preparation_step

    loading = preparation_step("en", "load")
    assert all(preparation_step("en", f"{BUILD}:{step}") != loading for step in ORT_STEPS)
