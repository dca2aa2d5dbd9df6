"""What a question set scores: page and answer hits at k, reciprocal ranks, percentiles."""

from __future__ import annotations

import re
import unicodedata
from typing import Sequence

from backend.types import Source

KS = (1, 5, 10)
SAMPLE_SEED = 20261129  # the one seed of every sample (questions of a set, chunks of the self-test)
_PUNCT_OR_SPACE = re.compile(r"[\s\W_]+", re.UNICODE)


def normalize_answer(text: str) -> str:
    """NFKC, lower case, white space and punctuation removed (the bench's answer-matching rule)."""
    return _PUNCT_OR_SPACE.sub("", unicodedata.normalize("NFKC", text).lower())


def source_has_page(source: Source, doc: str, pages: Sequence[int]) -> bool:
    return source.file == doc and any(source.page <= p <= source.page_end for p in pages)


def source_has_answer(source: Source, answers: Sequence[str]) -> bool:
    text = normalize_answer(source.text)
    return any(a and a in text for a in (normalize_answer(x) for x in answers))


def question_metrics(sources: Sequence[Source], question: dict) -> dict[str, float]:
    page_hits = [source_has_page(s, question["doc"], question["pages"]) for s in sources[:10]]
    answer_hits = [source_has_answer(s, question["answers"]) for s in sources[:10]]
    metrics = {}
    for k in KS:
        metrics[f"hit@{k}"] = float(any(page_hits[:k]))
        metrics[f"answer_hit@{k}"] = float(any(answer_hits[:k]))
    first = next((i for i, hit in enumerate(answer_hits, 1) if hit), None)
    metrics["mrr@10"] = 1.0 / first if first else 0.0
    first_page = next((i for i, hit in enumerate(page_hits, 1) if hit), None)
    metrics["page_mrr@10"] = 1.0 / first_page if first_page else 0.0  # the metric of sets without answers
    return metrics


def mean_metrics(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    return {key: round(sum(r[key] for r in rows) / len(rows), 4) for key in rows[0]}


def percentile(sorted_values: Sequence[float], pct: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, round(pct / 100 * (len(sorted_values) - 1))))
    return float(sorted_values[index])
