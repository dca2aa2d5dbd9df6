"""Uploads a kill, a crash or a shutdown cut short, finished at the next start.

Start-up (``KnowledgeBases.recover``) leaves nothing of a pending document searchable but keeps its parsed
pages, its figures and its original (``OpenKB.interrupted_uploads``). ``resume_interrupted`` ingests each
original again under its own name: the checkpoint makes the parse go on after the last page read.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable, Optional, Sequence

from backend.errors import DocLensError
from backend.knowledge_bases.lifecycle import KnowledgeBases
from backend.knowledge_bases.open_kb import OpenKB
from backend.types import IngestResult, ProgressCallback

log = logging.getLogger(__name__)

Ingest = Callable[..., list[IngestResult]]  # DocLens.ingest(kb, paths, progress=, display_names=)


def resume_interrupted(
    kbs: KnowledgeBases, ingest: Ingest, progress: Optional[ProgressCallback], kb_name: str = ""
) -> list[IngestResult]:
    """Every interrupted upload of ``kb_name`` (or of every knowledge base), finished; what each came to."""
    results: list[IngestResult] = []
    for listed in kbs.list():
        if kb_name and listed.name != kb_name:
            continue
        kb = kbs.open(listed.name, check_model=False)
        kept = kb.interrupted_uploads()
        if not kept:
            continue
        log.info("knowledge base %r: resuming %d interrupted upload(s)", listed.name, len(kept))
        try:
            results += _resume(kb, kept, ingest, progress)
        except DocLensError as exc:  # e.g. another embedding model configured: kept for when it fits again
            log.warning("knowledge base %r: interrupted uploads not resumed: %s", listed.name, exc)
    return results


def _resume(
    kb: OpenKB, kept: Sequence[tuple[Path, str]], ingest: Ingest, progress: Optional[ProgressCallback]
) -> list[IngestResult]:
    results = ingest(kb.name, [pdf for pdf, _ in kept], progress=progress, display_names=[name for _, name in kept])
    for (pdf, _), result in zip(kept, results):
        if result.status == "duplicate":  # the same file was uploaded again meanwhile: nothing left to do
            kb.forget_parsed(pdf.stem)
    return results
