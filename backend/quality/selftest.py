"""The self-test: stored chunks asked back as questions (their longest sentence), and how often the
search finds their chunk and page."""

from __future__ import annotations

import random
import re
from typing import Any, Optional

from backend.errors import DocLensError
from backend.quality.metrics import SAMPLE_SEED
from backend.service import LOCAL, DocLens
from backend.types import ProgressCallback, ProgressEvent, SearchMode

_SENTENCE_END = re.compile(r"(?<=[。！？；!?;])|(?<=\.)\s+")


def probe_sentence(text: str) -> str:
    """The longest sentence of a chunk (capped), used as the question that should find that chunk."""
    sentences = [s.strip() for s in _SENTENCE_END.split(text) if s and len(s.strip()) >= 8]
    best = max(sentences, key=len) if sentences else text.strip()
    return best[:200]


def selftest(
    service: DocLens,
    kb_name: str,
    samples: int = 50,
    progress: Optional[ProgressCallback] = None,
    who: str = LOCAL,
) -> dict[str, Any]:
    """``who``: the login running it (its role is checked on each call)."""
    chunks = [c for c in service.indexed_chunks(kb_name, who) if len(c.content) >= 30]
    if not chunks:
        raise DocLensError(f"knowledge base '{kb_name.strip()}' has no chunks to test: upload PDFs first")
    picked = random.Random(SAMPLE_SEED).sample(chunks, min(samples, len(chunks)))
    chunk_hits = {1: 0, 5: 0}
    page_hits = {1: 0, 5: 0}
    for index, chunk in enumerate(picked, 1):
        if progress is not None:  # 20+ s on a busy machine: say how far along it is
            progress(
                ProgressEvent("search", file="self-test", file_index=1, file_count=1, current=index, total=len(picked))
            )
        result = service.search(kb_name, probe_sentence(chunk.content), mode=SearchMode.RERANK, top=5, who=who)
        for k in (1, 5):
            top = result.sources[:k]
            chunk_hits[k] += any(s.chunk_id == chunk.id for s in top)
            page_hits[k] += any(s.doc_id == chunk.doc_id and s.page <= chunk.page <= s.page_end for s in top)
    n = len(picked)
    return {
        "samples": n,
        "chunk_top1": round(chunk_hits[1] / n, 3),
        "chunk_top5": round(chunk_hits[5] / n, 3),
        "page_top1": round(page_hits[1] / n, 3),
        "page_top5": round(page_hits[5] / n, 3),
    }
