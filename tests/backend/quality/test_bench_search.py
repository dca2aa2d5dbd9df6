"""bench-search on a tiny synthetic library: the report's shape and a full-recall document filter
(figures are printed by the benchmark, never asserted)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from backend.quality import bench_search
from backend.quality.bench_search import Base, build_kb, edit_text, measure_size, noise_scale, synthetic_rows, table
from tests.conftest import make_settings

TEXTS = [
    "能量守恒定律是物理学的基本定律之一",
    "Revenue grew by twelve percent in the third quarter",
    "深度学习模型需要大量的训练数据",
    "The committee approved the new budget for schools",
    "长江是中国最长的河流",
    "Photosynthesis turns light into chemical energy",
]


def tiny_base(copies: int = 5) -> Base:
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(len(TEXTS) * copies, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    texts = [f"{t} ({i})" for i in range(copies) for t in TEXTS]
    return Base(
        texts=texts,
        langs=["zh" if ord(t[0]) > 0x3000 else "en" for t in texts],
        kinds=["text"] * len(texts),
        vectors=vectors,
        questions=[t[:12] for t in texts] * 3,
    )


def test_copies_are_edited_and_their_vectors_perturbed() -> None:
    base, rng = tiny_base(), np.random.default_rng(0)
    vocabulary = ["alpha", "beta", "gamma"]
    rows = synthetic_rows(base, 0, vocabulary, noise_scale(base.vectors), rng)
    n = len(base.texts)
    assert [r.content for r in rows[:n]] == base.texts  # the first round: as ingested
    copy = rows[n]  # the first second-round copy, of base chunk 0
    assert copy.content != base.texts[0]
    assert 0.3 < float(copy.vector @ base.vectors[0]) < 0.999
    assert edit_text("a b c d e f g h i j k l", vocabulary, rng) != "a b c d e f g h i j k l"


def test_a_tiny_library_is_measured_with_a_full_recall_filter(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(bench_search, "QUESTIONS", 6)
    monkeypatch.setattr(bench_search, "FILTERED_QUESTIONS", 4)
    base = tiny_base()
    settings = make_settings(tmp_path / "kb")
    build_kb(settings, base, 150)
    report = measure_size(settings, base, 150)
    assert report["chunks"] == 150 and report["filter_recall"] == 1.0
    assert set(report["stages"]) == {"embed", "dense", "keyword", "vectors", "rerank"}
    assert all(report["stages"][stage]["p50_ms"] > 0 for stage in ("embed", "dense", "keyword")), report["stages"]
    assert report["p95_ms"] >= report["p50_ms"] > 0 and report["disk_mb"] > 0 and report["rss_mb"] > 0
    assert "| 150 |" in table({"sizes": [report]})
