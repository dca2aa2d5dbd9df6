"""Uploads a kill, a crash or a shutdown cut short, finished at the next start.

Start-up (``KnowledgeBases.recover``) leaves nothing of a pending document searchable but keeps its parsed
pages, its figures and its original (``OpenKB.interrupted_uploads``). ``resume_interrupted`` ingests each
original again under its own name: the checkpoint makes the parse go on after the last page read.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from backend.errors import DocLensError
from backend.knowledge_bases.audit import RESUME
from backend.knowledge_bases.lifecycle import KnowledgeBases
from backend.knowledge_bases.open_kb import OpenKB
from backend.types import IngestResult, ProgressCallback

log = logging.getLogger(__name__)

Ingest = Callable[..., list[IngestResult]]  # DocLens.ingest(kb, paths, progress=, display_names=, who=)


class InterruptedUploads:
    """What the service does with them: list them, and finish them (``DocLens`` mixes this in)."""

    kbs: KnowledgeBases
    ingest: Ingest

    def interrupted_uploads(self, kb: str = "") -> dict[str, list[str]]:
        """The file names of the uploads a kill or a shutdown cut short, per knowledge base (or in ``kb``)."""
        return interrupted_uploads(self.kbs, kb)

    def resume_interrupted(
        self, progress: Optional[ProgressCallback] = None, kb: str = "", **options: Any
    ) -> list[IngestResult]:
        """Finish the uploads a kill or a shutdown cut short (in ``kb``, or all), after the pages they had read."""
        return resume_interrupted(self.kbs, self.ingest, progress, kb, **options)


def interrupted_uploads(kbs: KnowledgeBases, kb_name: str = "") -> dict[str, list[str]]:
    """The file names of the interrupted uploads of each knowledge base that has any (or of ``kb_name``),
    in the order ``resume_interrupted`` takes them."""
    found = {kb.name: [name for _, name in kb.interrupted_uploads()] for kb in _with_interrupted(kbs, kb_name)}
    return {name: files for name, files in found.items() if files}


def resume_interrupted(
    kbs: KnowledgeBases, ingest: Ingest, progress: Optional[ProgressCallback], kb_name: str = "", **options: Any
) -> list[IngestResult]:
    """Every interrupted upload of ``kb_name`` (or of every knowledge base), finished; what each came to.
    ``options`` go to the ingest (cancel, cancel_files, on_result: a web page follows it as an upload)."""
    results: list[IngestResult] = []
    for kb in _with_interrupted(kbs, kb_name):
        kept = kb.interrupted_uploads()
        if not kept:
            continue
        log.info("knowledge base %r: resuming %d interrupted upload(s)", kb.name, len(kept))
        try:
            results += _resume(kb, kept, ingest, progress, options)
        except DocLensError as exc:  # e.g. another embedding model configured: kept for when it fits again
            log.warning("knowledge base %r: interrupted uploads not resumed: %s", kb.name, exc)
    return results


def _with_interrupted(kbs: KnowledgeBases, kb_name: str) -> list[OpenKB]:
    return [kbs.open(listed.name, check_model=False) for listed in kbs.list() if listed.name == kb_name or not kb_name]


def _resume(
    kb: OpenKB,
    kept: Sequence[tuple[Path, str]],
    ingest: Ingest,
    progress: Optional[ProgressCallback],
    options: dict[str, Any],
) -> list[IngestResult]:
    pdfs, names = [pdf for pdf, _ in kept], [name for _, name in kept]
    results = ingest(kb.name, pdfs, progress=progress, display_names=names, who=RESUME, **options)
    for pdf, result in zip(pdfs, results):
        # the same file uploaded again meanwhile, or the user cancelled it: it does not come back next start
        if result.status in ("duplicate", "cancelled"):
            kb.forget_parsed(pdf.stem)
    return results
