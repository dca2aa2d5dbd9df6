"""The service facade: what the app does at start-up."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from backend.embedding import create_embedder
from backend.service import DocLens
from tests.conftest import make_settings


def test_models_are_prepared_in_the_background(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    with DocLens(settings) as service:
        service.prepare_models_in_background().join(timeout=300)
        assert service._embedder is create_embedder(settings)  # loaded, and the shared instance


def test_a_model_that_cannot_load_is_a_warning_not_a_crash(tmp_path: Path,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    settings = make_settings(tmp_path, DOCLENS_EMBEDDING_MODEL="bundled:nope")
    with DocLens(settings) as service, caplog.at_level(logging.WARNING, logger="backend.service"):
        service.prepare_models_in_background().join(timeout=60)
        assert service._embedder is None
    assert "no such bundled model" in caplog.text
