"""The calibration statistics shipped for the int8 build (backend/embedding/int8_calibration.py): they are
the ones for the bundled model and the calibration texts, and no others are used."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from backend.embedding import E5_PASSAGE_PROMPT, E5_QUERY_PROMPT
from backend.embedding.bundled import bundled_model_dir
from backend.embedding.int8_calibration import (
    CALIBRATION_FILE,
    CALIBRATION_QUERIES,
    FINGERPRINT,
    STATISTICS_FILE,
    fingerprint,
    stored_statistics,
)
from tests.conftest import MODEL_CACHE

PROMPTS = (E5_QUERY_PROMPT, E5_PASSAGE_PROMPT)


def test_the_shipped_statistics_are_for_the_bundled_model_and_the_calibration_texts() -> None:
    """Written again (``python -m backend.embedding.int8``) whenever the texts, prompts or
    model change: otherwise every first start collects them (half a minute more)."""
    stored = stored_statistics(STATISTICS_FILE, fingerprint(bundled_model_dir(MODEL_CACHE), PROMPTS))
    assert stored is not None, "assets/embedding-calibration-statistics.npz is stale"
    texts = sum(1 for line in CALIBRATION_FILE.read_text(encoding="utf-8").splitlines() if line.strip())
    assert stored.subset_size == texts + CALIBRATION_QUERIES
    kinds = {key.split("_", 1)[0] for key in stored}
    assert kinds == {"MinMaxTensorStatistic", "MeanTensorStatistic"} and len(stored) > 300


def test_statistics_for_another_model_or_prompt_are_not_used(tmp_path: Path) -> None:
    model_dir = bundled_model_dir(MODEL_CACHE)
    assert fingerprint(model_dir, ("query: ", "passage: ")) != fingerprint(model_dir, ("q: ", "passage: "))
    assert fingerprint(model_dir, PROMPTS) != fingerprint(model_dir.with_name("another-model"), PROMPTS)
    assert stored_statistics(STATISTICS_FILE, "a model they were not collected for") is None
    assert stored_statistics(tmp_path / "missing.npz", fingerprint(model_dir, PROMPTS)) is None
    broken = tmp_path / "broken.npz"
    np.savez_compressed(broken, **{FINGERPRINT: np.array(fingerprint(model_dir, PROMPTS))})  # no SUBSET_SIZE
    assert stored_statistics(broken, fingerprint(model_dir, PROMPTS)) is None
