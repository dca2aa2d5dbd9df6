"""Shared fixtures: real settings on a temporary data folder, one model cache for the whole run, one
DocLens per test module (a module that needs a library overrides ``service``, requesting this one, or
``service_env`` for other settings), a Milvus Lite server on TCP, and the recording fake OpenAI server."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest

from backend.settings import Settings, load_settings

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("DOCLENS_SHARED_DIR", REPO_ROOT.parent / "shared"))
SAMPLES = SHARED / "samples"
BENCH = SHARED / "bench"
# The bundled embedding model is rebuilt once per checkout, not once per test.
MODEL_CACHE = REPO_ROOT / ".cache" / "test-models"
ARTIFACTS = REPO_ROOT / "test-artifacts"


def make_settings(data_dir: Path, **env: str) -> Settings:
    environ = {"DOCLENS_DATA_DIR": str(data_dir), "DOCLENS_EMBEDDING_CACHE_DIR": str(MODEL_CACHE)}
    environ.update(env)
    return load_settings(REPO_ROOT / "config.yaml", environ=environ)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path / "data")


@pytest.fixture(scope="module")
def fake():
    """The recording OpenAI-compatible server on 127.0.0.1 (tests/support/fake_openai.py), one per module."""
    from tests.support.fake_openai import FakeOpenAI

    with FakeOpenAI() as server:
        yield server


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    """The module's data folder (its service's Milvus Lite store and knowledge bases)."""
    return tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1]) / "data"


@pytest.fixture(scope="module")
def service_env() -> dict[str, str]:
    """Settings (as DOCLENS_* variables) on top of the test settings for the module's ``service``."""
    return {}


@pytest.fixture(scope="module")
def service(data_dir: Path, service_env: dict[str, str]) -> Iterator:
    """One DocLens per test module: a real Milvus Lite file, the bundled embedder. Milvus Lite allows one
    client per store per process, so a module switches it between configurations with ``reconfigure``."""
    from backend.service import DocLens

    with DocLens(make_settings(data_dir, **service_env)) as svc:
        yield svc


@pytest.fixture
def fresh_service(settings: Settings) -> Iterator:
    """A DocLens of its own for one test, on an empty data folder."""
    from backend.service import DocLens

    with DocLens(settings) as svc:
        yield svc


@pytest.fixture(scope="module")
def milvus_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Milvus Lite server on TCP: the same protocol a Milvus standalone speaks."""
    from backend.processes import free_port, stop
    from backend.store import lite_server

    port = free_port()
    proc = lite_server.start(tmp_path_factory.mktemp("server-store") / "store", port)
    yield f"http://127.0.0.1:{port}"
    stop(proc)
