"""Shared fixtures: real settings on a temporary data folder, one model cache for the whole run."""

from __future__ import annotations

import os
from pathlib import Path

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
