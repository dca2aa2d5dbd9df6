"""The bundled model in int8 on OpenVINO: built once next to the model, close to the float32 vectors,
chosen by ``embedding.dtype: auto`` (``int8_runtime: auto``) on CPUs with VNNI."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from backend.embedding import E5_PASSAGE_PROMPT, E5_QUERY_PROMPT, Embedder, create_embedder, resolve_dtype
from backend.embedding.builds import TMP_PREFIX
from backend.embedding.bundled import bundled_model_dir
from backend.embedding.int8 import (
    INT8_MARKER,
    MODEL_FILE,
    WEIGHTS_FILE,
    Int8Embedder,
    ensure_int8_model,
    int8_model_dir,
)
from backend.embedding.int8_calibration import calibration_feeds
from backend.errors import EmbeddingError
from tests.backend.embedding.conftest import TEXTS, batched_and_alone, left_behind
from tests.conftest import MODEL_CACHE, REPO_ROOT, make_settings

QUERY = "长城有多长？"
PROMPTS = (E5_QUERY_PROMPT, E5_PASSAGE_PROMPT)


@pytest.fixture(scope="module")
def int8(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    return create_embedder(
        make_settings(
            tmp_path_factory.mktemp("data"), DOCLENS_EMBEDDING_DTYPE="int8", DOCLENS_EMBEDDING_INT8_RUNTIME="openvino"
        )
    )


@pytest.fixture(scope="module")
def f32(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    return create_embedder(make_settings(tmp_path_factory.mktemp("data"), DOCLENS_EMBEDDING_DTYPE="float32"))


def test_int8_model_is_built_once_next_to_the_bundled_model(int8: Embedder) -> None:
    assert isinstance(int8, Int8Embedder)
    assert int8.model_id == "bundled:multilingual-e5-small" and int8.dim == 384
    folder = int8_model_dir(bundled_model_dir(MODEL_CACHE))
    assert (folder / INT8_MARKER).is_file() and (folder / WEIGHTS_FILE).stat().st_size > 100_000_000
    assert not left_behind(MODEL_CACHE, folder), "a temporary build folder was left behind"
    built = (folder / MODEL_FILE).stat().st_ino
    assert ensure_int8_model(bundled_model_dir(MODEL_CACHE), PROMPTS) == folder
    assert (folder / MODEL_FILE).stat().st_ino == built  # reused, not rebuilt


def test_int8_vectors_stay_close_to_float32(int8: Embedder, f32: Embedder) -> None:
    passages = int8.embed_passages(TEXTS)
    assert passages.dtype == np.float32 and passages.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-4)
    assert np.sum(passages * f32.embed_passages(TEXTS), axis=1).min() > 0.995
    assert float(int8.embed_queries([QUERY])[0] @ f32.embed_queries([QUERY])[0]) > 0.995


def test_int8_search_prefers_the_right_passage(int8: Embedder) -> None:
    passages = int8.embed_passages(TEXTS[:4])  # without "短": one character is close to every short query
    assert int(np.argmax(passages @ int8.embed_queries([QUERY])[0])) == 0
    assert int(np.argmax(passages @ int8.embed_queries(["At what temperature does water boil?"])[0])) == 1


def test_int8_batches_keep_the_input_order(tmp_path: Path, int8: Embedder) -> None:
    env = {"DOCLENS_EMBEDDING_DTYPE": "int8", "DOCLENS_EMBEDDING_INT8_RUNTIME": "openvino"}
    # Activation scales are calibrated once, so a vector does not depend on what shares its batch.
    assert batched_and_alone(tmp_path, int8, TEXTS, 2, **env) > 0.9999


def test_calibration_covers_both_languages_passages_and_questions() -> None:
    feeds = calibration_feeds(bundled_model_dir(MODEL_CACHE), PROMPTS)
    assert len(feeds) >= 150
    lengths = [feed["input_ids"].shape[1] for feed in feeds]
    assert min(lengths) < 40 and max(lengths) > 200  # short questions and full passages
    assert all(set(feed) == {"input_ids", "attention_mask", "token_type_ids"} for feed in feeds)


def test_auto_picks_int8_only_for_the_bundled_model() -> None:
    assert resolve_dtype("auto", "bundled:multilingual-e5-small") == "int8"  # OpenVINO, or the 4-bit ONNX model
    assert resolve_dtype("auto", "BAAI/bge-small-zh-v1.5") in ("bfloat16", "float32")
    assert resolve_dtype("float32", "bundled:multilingual-e5-small") == "float32"


def test_int8_for_a_hub_model_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="int8 is available for the bundled model only"):
        create_embedder(
            make_settings(
                tmp_path,
                DOCLENS_EMBEDDING_DTYPE="int8",
                DOCLENS_EMBEDDING_INT8_RUNTIME="openvino",
                DOCLENS_EMBEDDING_MODEL="BAAI/bge-small-zh-v1.5",
            )
        )


@pytest.mark.slow
def test_interrupted_and_concurrent_int8_builds_end_in_one_folder(tmp_path: Path) -> None:
    cache = tmp_path / "models"
    cache.mkdir()
    source = cache / bundled_model_dir(MODEL_CACHE).name
    source.symlink_to(bundled_model_dir(MODEL_CACHE), target_is_directory=True)
    target = int8_model_dir(source)
    (cache / f"{TMP_PREFIX}{target.name}-interrupted").mkdir()
    target.mkdir()
    (target / MODEL_FILE).write_bytes(b"half a model")  # a folder without the marker is not trusted
    (cache / f"{source.name}-onnx-int8").mkdir()  # an earlier version's ONNX Runtime model: removed
    results: list[Path] = []
    threads = [threading.Thread(target=lambda: results.append(ensure_int8_model(source, PROMPTS))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [target, target]
    assert (target / INT8_MARKER).is_file() and (target / WEIGHTS_FILE).stat().st_size > 100_000_000
    assert sorted(p.name for p in cache.iterdir() if not p.name.endswith(".lock")) == sorted([source.name, target.name])


def test_int8_embeds_from_several_threads_at_once(int8: Embedder) -> None:
    """A search embeds its question while an upload embeds passages: neither may break the other."""
    expected = int8.embed_queries([QUERY])[0]
    errors: list[BaseException] = []
    results: list[np.ndarray] = []

    def search() -> None:
        try:
            results.extend(int8.embed_queries([QUERY]) for _ in range(5))
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=search) for _ in range(3)]
    for thread in threads:
        thread.start()
    int8.embed_passages(TEXTS * 4)
    for thread in threads:
        thread.join()
    assert not errors and len(results) == 15
    assert all(float(vector[0] @ expected) > 0.9999 for vector in results)


def test_a_question_and_its_translation_never_wait_for_an_uploads_batches(int8: Embedder) -> None:
    """An upload holds the streams for all its batches; a question embedded with its translation (two
    queries) must run on the question's own request, not queue behind the whole upload."""
    assert isinstance(int8, Int8Embedder)
    upload = int8.runner.embed_many([[E5_PASSAGE_PROMPT + text] for text in TEXTS * 2])
    next(upload)  # the upload's batches are in flight, and stay so until it is read to its end
    asked: list[np.ndarray] = []
    question = threading.Thread(target=lambda: asked.append(int8.embed_queries([QUERY, "How long is the wall?"])))
    question.start()
    question.join(timeout=20)
    waited = question.is_alive()
    list(upload)
    question.join()
    assert not waited, "the question waited for the upload's batches"
    assert asked[0].shape == (2, 384)


def test_openvino_sends_no_telemetry_and_writes_nothing_home(tmp_path: Path, int8: Embedder) -> None:
    """openvino and nncf count usage (a client id under ~/intel, events to Google Analytics) unless told not to."""
    script = (
        "import os; from backend.embedding import create_embedder; from tests.conftest import make_settings; "
        "from pathlib import Path; e = create_embedder(make_settings(Path(os.environ['DATA']), "
        "DOCLENS_EMBEDDING_DTYPE='int8', DOCLENS_EMBEDDING_INT8_RUNTIME='openvino')); e.embed_queries(['x']); print(os.environ.get('CI'))"
    )
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "CI"} | {"HOME": str(home), "DATA": str(tmp_path / "data")}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "None"  # CI is set only while OpenVINO starts
    assert not (home / "intel").exists()


def test_every_padded_length_stays_close_to_float32(int8: Embedder, f32: Embedder) -> None:
    # OpenVINO got inputs padded to exactly 32 tokens wrong (cosine 0.96): short passages and most
    # typed questions are that long.
    words = (
        "At sea level pure water boils at one hundred degrees Celsius which is two hundred twelve "
        "degrees Fahrenheit and the boiling point drops at altitude"
    ).split()
    texts = [" ".join(words[:n]) for n in range(2, len(words) + 1, 3)]
    assert np.sum(int8.embed_passages(texts) * f32.embed_passages(texts), axis=1).min() > 0.995
    queries = [" ".join(words[:n]) + "?" for n in (8, 14, 20)]
    assert np.sum(int8.embed_queries(queries) * f32.embed_queries(queries), axis=1).min() > 0.995


def test_int8_loads_without_torch_and_keeps_the_word_table_int8(tmp_path: Path) -> None:
    """An ingest holds this model and the OCR at once: transformers' tokenizer wrapper imported torch
    (~0.4 GB), the compiled model unpacked the 250,037-row table to float32 (~0.4 GB), and the tokenizers
    library held the vocabulary in 278 MB where sentencepiece takes 49."""
    script = (
        "import os, sys; from backend.embedding import create_embedder; from tests.conftest import make_settings; "
        "from pathlib import Path; e = create_embedder(make_settings(Path(os.environ['DATA']), "
        "DOCLENS_EMBEDDING_DTYPE='int8', DOCLENS_EMBEDDING_INT8_RUNTIME='openvino')); e.embed_passages(['x', 'y']); "
        "print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers', 'tokenizers') if m in sys.modules)); "
        "print(e.runner.table.weights.dtype, [i.get_any_name() for i in e.runner.model.inputs])"
    )
    env = dict(os.environ, DATA=str(tmp_path / "data"))
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    modules, model = done.stdout.strip().splitlines()[-2:]
    assert modules == "[]"
    assert model.startswith("int8 ") and "'inputs_embeds'" in model


def test_int8_tokenizes_exactly_as_transformers_does(int8: Embedder) -> None:
    from transformers import AutoTokenizer

    reference = AutoTokenizer.from_pretrained(str(bundled_model_dir(MODEL_CACHE)), local_files_only=True)
    texts = [E5_PASSAGE_PROMPT + t for t in TEXTS] + [
        "  two  spaces ",
        "ｆｕｌｌ　ｗｉｄｔｈ",
        "<s> </s> <pad>",
        "x" * 3000,
    ]
    runner = int8.runner  # type: ignore[attr-defined]
    expected = reference(texts, add_special_tokens=False, truncation=False, verbose=False)["input_ids"]
    assert runner.token_counts(texts) == [len(ids) for ids in expected]
    batch = reference(
        texts,
        padding=True,
        truncation=True,
        max_length=runner.max_seq_length,
        pad_to_multiple_of=16,
        return_tensors="np",
    )
    input_ids, mask = runner._tokenize(texts)
    assert np.array_equal(input_ids, batch["input_ids"]) and np.array_equal(mask, batch["attention_mask"])


def test_passage_batches_run_two_at_a_time_and_match_one_text_at_a_time(int8: Embedder) -> None:
    """A document's batches go to OpenVINO two at a time, one per stream, each on a core of its own: 1.4x
    the passages per second of one batch at a time on both cores. The vectors stay those of one text alone."""
    from backend.cpu import usable_cpus

    assert isinstance(int8, Int8Embedder)
    assert int8.runner.streams == min(2, usable_cpus())
    texts = [f"{text} ({i})" for i, text in enumerate(TEXTS * 5)]  # several batches in flight
    pipelined = int8.embed_passages(texts)
    one_by_one = np.vstack([int8.embed_passages([text]) for text in texts])
    assert np.sum(pipelined * one_by_one, axis=1).min() > 0.9999
