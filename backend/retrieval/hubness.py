"""Hubness correction for passages in the other language, without a translation.

Across languages the multilingual embeddings have "hubs": passages (a generic one, or one quoting a few
words of the question's language) that sit close to almost any question in that language and so outrank
the passage that answers it. As in cross-domain similarity local scaling (CSLS, Conneau et al. 2018), a
passage's hubness is its mean cosine to the few nearest of a fixed set of generic questions in the
question's language (``reference_questions.json``, written for this and not from any benchmark); it is
subtracted from the question's cosine, centred on the candidates' median so that the scale the
reranker and the confidence read stays where it was.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from statistics import median
from typing import TYPE_CHECKING, Callable, Mapping

import numpy as np

if TYPE_CHECKING:
    from backend.embedding.base import Embedder

REFERENCE_FILE = Path(__file__).with_name("reference_questions.json")
NEAREST = 10  # reference questions a passage's hubness is averaged over


def reference_questions(lang: str) -> list[str]:
    return list(json.loads(REFERENCE_FILE.read_text(encoding="utf-8")).get(lang, []))


class HubScores:
    """A passage vector's hubness towards questions in one language; the references are embedded once.
    ``embedder``: gives the embedder when the references are first needed."""

    def __init__(self, embedder: Callable[[], Embedder]):
        self._embedder = embedder
        self._references: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def references(self, lang: str) -> np.ndarray:
        with self._lock:
            if lang not in self._references:
                questions = reference_questions(lang)
                embedder = self._embedder()
                self._references[lang] = (
                    np.asarray(embedder.embed_queries(questions), dtype=np.float32)
                    if questions
                    else np.zeros((0, embedder.dim), dtype=np.float32)
                )
            return self._references[lang]

    def of(self, lang: str, vectors: np.ndarray) -> np.ndarray:
        """Mean cosine of each row of ``vectors`` to its NEAREST reference questions in ``lang``."""
        references = self.references(lang)
        if not len(references) or not len(vectors):
            return np.zeros(len(vectors), dtype=np.float32)
        cosines = np.asarray(vectors, dtype=np.float32) @ references.T
        nearest = min(NEAREST, cosines.shape[1])
        return np.sort(cosines, axis=1)[:, -nearest:].mean(axis=1)


def corrections(hubs: Mapping[str, float], weight: float) -> dict[str, float]:
    """What to add to each candidate's cosine: ``weight`` x (the candidates' median hubness - its own)."""
    if len(hubs) < 2 or weight <= 0:
        return {}
    centre = median(hubs.values())
    return {chunk_id: weight * (centre - hub) for chunk_id, hub in hubs.items()}
