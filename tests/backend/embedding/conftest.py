"""What the embedding backends' tests share."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from backend.embedding import Embedder, create_embedder
from backend.embedding.builds import TMP_PREFIX
from tests.conftest import make_settings

# Passages of the kinds PDFs hold, in both languages: prose, a table, a formula, one character.
TEXTS = [
    "长城是中国古代的军事防御工程，全长约两万一千公里，东起山海关，西至嘉峪关。",
    "At sea level, pure water boils at 100 degrees Celsius (212 degrees Fahrenheit).",
    "| 年份 | 营业收入（万元） | 同比 |\n| --- | --- | --- |\n| 2023 | 12,345.6 | 8.2% |",
    "薛定谔方程 $i\\hbar \\partial_t \\psi = H \\psi$ 描述了量子态随时间的演化。" * 4,
    "短",
]


def batched_and_alone(data_dir: Path, reference: Embedder, texts: list[str], batch_size: int, **env: str) -> float:
    """The lowest cosine between each text embedded in batches of ``batch_size`` (by a new embedder of these
    settings) and alone (by ``reference``); the batches' progress reports must count every text in order."""
    small_batches = create_embedder(make_settings(data_dir, DOCLENS_EMBEDDING_BATCH_SIZE=str(batch_size), **env))
    calls: list[tuple[int, int]] = []
    batched = small_batches.embed_passages(texts, progress=lambda done, total: calls.append((done, total)))
    ends = list(range(batch_size, len(texts), batch_size)) + [len(texts)]
    assert calls == [(end, len(texts)) for end in ends]
    one_by_one = np.vstack([reference.embed_passages([text]) for text in texts])
    return float(np.sum(batched * one_by_one, axis=1).min())


def left_behind(cache: Path, folder: Path) -> list[Path]:
    """Temporary build folders of ``folder`` left in ``cache``: its own (``mkdtemp``'s eight random characters
    after its name), not another model's build that a test beside it runs meanwhile."""
    return list(cache.glob(f"{TMP_PREFIX}{folder.name}-" + "?" * 8))
