"""Index the knowledge bases of a Milvus Lite 3.x data folder again, from the PDFs they kept.

``backend.knowledge_bases.old_folders`` moved the old store and folders aside when the service opened; here each
old knowledge base is created again under its name and its documents are ingested from ``files/`` under
their file names, with the summaries carried over. A knowledge base whose documents are all back is
removed from the waiting folder; one with failures stays there, and running again (the next start, or
``python main.py migrate``) adds only what is missing: documents already indexed are skipped by content.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from backend.knowledge_bases import names, old_folders
from backend.knowledge_bases.lifecycle import KnowledgeBases
from backend.knowledge_bases.registry import COMPLETE, Registry
from backend.types import IngestResult, ProgressCallback

# (knowledge base, files, progress=, display_names=) -> one result per file: the service's ingest, which
# runs above this package (ingestion builds on knowledge bases), so it is handed in, never imported.
IngestFiles = Callable[..., list[IngestResult]]

log = logging.getLogger(__name__)


@dataclass
class MigratedKB:
    name: str
    documents: int  # complete documents in the old knowledge base
    indexed: int  # of those, now in the new one
    failures: list[str] = field(default_factory=list)  # "file: reason" for each one not back

    @property
    def complete(self) -> bool:
        return self.indexed == self.documents


def pending(data_dir: Path) -> bool:
    return bool(old_folders.waiting_folders(data_dir))


def migrate(
    kbs: KnowledgeBases, ingest: IngestFiles, data_dir: Path, progress: Optional[ProgressCallback] = None
) -> list[MigratedKB]:
    """Index every waiting knowledge base again; safe to interrupt and run again."""
    folders = old_folders.waiting_folders(data_dir)
    results = []
    for i, folder in enumerate(folders, 1):
        name = names.display_name(folder.name.split("-", 1)[0])  # "-<time>": a second copy of one name
        if name is None:
            log.warning("migration: %s is not a DocLens knowledge base folder: left where it is", folder)
            continue
        log.info("migration: indexing knowledge base %r again (%d of %d)", name, i, len(folders))
        result = _migrate_kb(kbs, ingest, name, folder, progress)
        results.append(result)
        if result.complete:
            shutil.rmtree(folder)
        else:
            log.warning(
                "migration: %r: %d of %d documents indexed again; the rest stay in %s: %s",
                name,
                result.indexed,
                result.documents,
                folder,
                "; ".join(result.failures),
            )
    old_folders.finish(data_dir)
    return results


def _migrate_kb(
    kbs: KnowledgeBases, ingest: IngestFiles, name: str, folder: Path, progress: Optional[ProgressCallback]
) -> MigratedKB:
    old = Registry(folder)
    documents = old.documents(COMPLETE)
    if not any(kb.name == name for kb in kbs.list()):
        kbs.create(name)
    originals = [(d, folder / "files" / f"{d.doc_id}.pdf") for d in documents]
    missing = [f"{d.file}: its original PDF is missing" for d, path in originals if not path.is_file()]
    present = [(d, path) for d, path in originals if path.is_file()]
    failures = list(missing)
    if present:
        results = ingest(name, [p for _, p in present], progress=progress, display_names=[d.file for d, _ in present])
        failures += [r.error or f"{r.file}: {r.status}" for r in results if not r.ok]
    new = kbs.open(name).registry
    back = {d.sha256 for d in new.documents(COMPLETE)}
    for document in documents:
        text = old.summary(document.doc_id)
        if text and document.sha256 in back and new.summary(document.doc_id) is None:
            new.save_summary(document.doc_id, text)
    return MigratedKB(name, len(documents), sum(d.sha256 in back for d in documents), failures)
