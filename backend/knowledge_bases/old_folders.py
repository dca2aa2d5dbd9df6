"""Data folders made with Milvus Lite 3.x, which the pinned Lite 2.5 engine cannot read.

Lite 3.x keeps its store in a folder (``milvus.db/``), Lite 2.5 in one SQLite file (``milvus.db``); neither
engine reads the other's. Nothing is lost: every knowledge base keeps its original PDFs under ``files/``
and its registry beside them. So the old store and the old knowledge-base folders are moved aside (never
deleted: the old store stays for going back), and ``backend.knowledge_bases.reindex`` indexes the originals again.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from backend.store.lite import made_by_lite3

log = logging.getLogger(__name__)

OLD_STORE_SUFFIX = ".lite3"
OLD_KBS = "kbs.lite3"  # knowledge-base folders waiting to be indexed again; gone when all are done


def set_aside(data_dir: Path, store: Path) -> bool:
    """Move a Lite 3.x store and its knowledge-base folders out of the way; True when there was one."""
    if not made_by_lite3(store):
        return False
    store.rename(_free_name(store.with_name(store.name + OLD_STORE_SUFFIX)))
    kbs, waiting = data_dir / "kbs", data_dir / OLD_KBS
    waiting.mkdir(exist_ok=True)
    if kbs.is_dir():
        for folder in sorted(kbs.iterdir()):
            if folder.is_dir():  # a name taken by an earlier, unfinished migration: keep both
                folder.rename(_free_name(waiting / folder.name))
    log.warning(
        "the Milvus Lite store %s was made by Milvus Lite 3.x, which this version cannot read: moved "
        "it aside; its knowledge bases are indexed again from their PDFs (at app start, or with "
        "`python main.py migrate`)",
        store,
    )
    return True


def waiting_folders(data_dir: Path) -> list[Path]:
    """Old knowledge-base folders not yet indexed again, in a stable order."""
    waiting = data_dir / OLD_KBS
    return sorted(p for p in waiting.iterdir() if p.is_dir()) if waiting.is_dir() else []


def finish(data_dir: Path) -> None:
    """All old knowledge bases are indexed again: drop the empty waiting folder."""
    waiting = data_dir / OLD_KBS
    if waiting.is_dir() and not any(waiting.iterdir()):
        waiting.rmdir()


def _free_name(path: Path) -> Path:
    if not path.exists():
        return path
    return path.with_name(f"{path.name}-{time.strftime('%Y%m%d-%H%M%S')}-{time.time_ns() % 10**6}")
