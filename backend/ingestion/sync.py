"""A sync plan (``sync_plan``) carried out on a knowledge base, and a folder watched by polling.

Every step is one the knowledge base already makes crash-safe, so a sync killed anywhere and run again
ends where one clean run ends: a removal moves the document to the trash in one registry update; a rename
rewrites the rows before the registry entry; an addition or a replacement is an ``ingest`` (pending until
complete, the replaced version removed only after its successor is complete, and kept when it fails).
"""

from __future__ import annotations

import logging
import threading
from contextlib import ExitStack
from pathlib import Path
from typing import Callable, ContextManager, Optional, Sequence

from backend.errors import DocLensError
from backend.ingestion.sync_plan import (
    ADD,
    REMOVE,
    RENAME,
    REPLACE,
    SKIPPED,
    HashCache,
    SyncAction,
    SyncPlan,
    folder_signatures,
    list_folder,
    plan_sync,
)
from backend.ingestion.uploads import UploadItem
from backend.knowledge_bases.open_kb import OpenKB
from backend.types import DocumentInfo, IngestResult

log = logging.getLogger(__name__)
ActionCallback = Callable[[SyncAction], None]
IngestItems = Callable[[list[UploadItem], Callable[[int, IngestResult], None]], list[IngestResult]]


def sync_folder(
    kb: OpenKB,
    folder: Path,
    ingest: IngestItems,
    locks: Sequence[ContextManager],
    seal: Callable[[], None],
    dry_run: bool = False,
    hashes: Optional[HashCache] = None,
    leave_out: Optional[set[tuple[str, str]]] = None,
    on_action: Optional[ActionCallback] = None,
    remove: Optional[Callable[[DocumentInfo], object]] = None,
) -> SyncPlan:
    """The folder listed (before the locks: an upload meanwhile does not wait for the hashing), then,
    holding ``locks``, planned and (unless ``dry_run``) carried out; ``seal`` once rows were written.
    ``remove``: what becomes of a document whose file is gone (the facade moves it to the trash)."""
    if not folder.is_dir():
        raise DocLensError(f"{folder}: not a folder")
    files = list_folder(folder, hashes)
    with ExitStack() as held:
        for lock in locks:
            held.enter_context(lock)
        plan = plan_sync(files, kb.registry.documents(status="complete"))
        check_not_emptied(plan, kb, folder)
        leave_out_failed(plan, leave_out or set())
        if dry_run or plan.in_sync:
            return plan
        try:
            apply_plan(kb, plan, ingest, on_action, remove)
        finally:
            seal()
    return plan


def check_not_emptied(plan: SyncPlan, kb: OpenKB, folder: Path) -> None:
    """A folder without PDFs (a wrong path, an unmounted disk) would empty the knowledge base: refused."""
    removals = plan.of(REMOVE)
    if removals and len(removals) == len(plan.actions):
        raise DocLensError(
            f"{folder} has no PDFs: syncing would remove all {len(removals)} documents of '{kb.name}'; "
            f"delete the knowledge base instead if that is meant"
        )


def apply_plan(
    kb: OpenKB,
    plan: SyncPlan,
    ingest: IngestItems,
    on_action: Optional[ActionCallback] = None,
    remove: Optional[Callable[[DocumentInfo], object]] = None,
) -> None:
    """Removals, then renames (names are freed before they are taken again), then the files to index."""
    tell = on_action or (lambda _action: None)
    for action in plan.of(REMOVE):
        assert action.doc is not None
        if remove is None:
            kb.remove_document(action.doc.doc_id)
            _done(action, f"{action.doc.chunks} chunks", tell)
        else:
            remove(action.doc)
            _done(action, f"{action.doc.chunks} chunks, into the trash", tell)
    for action in plan.of(RENAME):
        assert action.doc is not None
        kb.rename_document(action.doc.doc_id, action.name)
        _done(action, f"{action.doc.chunks} chunks kept, nothing embedded again", tell)
    to_index = [a for a in plan.actions if a.kind in (ADD, REPLACE)]
    if to_index:
        _index(to_index, ingest, tell)


def _index(actions: list[SyncAction], ingest: IngestItems, tell: ActionCallback) -> None:
    def on_result(slot: int, result: IngestResult) -> None:
        action = actions[slot]
        if result.status in ("indexed", "replaced"):
            detail = f"{result.pages} pages ({result.ocr_pages} OCR), {result.chunks} chunks, {result.figures} figures"
            _done(action, detail + (f"; {result.error}" if result.error else ""), tell)
            return
        action.status = "failed"
        kept = " (its previous version stays searchable)" if action.kind == REPLACE else ""
        action.detail = (result.error or result.status) + kept
        tell(action)

    items = [UploadItem(a.source.path, a.name, exact=True) for a in actions if a.source is not None]
    ingest(items, on_result)


def _done(action: SyncAction, detail: str, tell: ActionCallback) -> None:
    action.status, action.detail = "done", detail
    log.info("sync: %s %s (%s)", action.kind, action.name, detail)
    tell(action)


def watch(
    folder: Path,
    sync_once: Callable[[], SyncPlan],
    interval: float,
    stop: threading.Event,
    on_error: Callable[[str], None],
) -> None:
    """``sync_once`` every ``interval`` seconds until ``stop`` is set, when the folder was quiet since the
    last look: a file still being copied in changes its size or time between two looks and waits."""
    last: Optional[dict[Path, tuple[int, int]]] = None
    told = ""
    while not stop.is_set():
        current = folder_signatures(folder) if folder.is_dir() else {}
        if last is None or current == last:
            try:
                sync_once()
                told = ""
            except DocLensError as exc:  # the next look tries again (a folder unmounted for a while)
                if str(exc) != told:  # said once, not at every look
                    on_error(str(exc))
                told = str(exc)
        last = current
        stop.wait(interval)


def leave_out_failed(plan: SyncPlan, failed: set[tuple[str, str]]) -> None:
    """While watching: a file that failed is tried again once it changes, not at every look."""
    for action in plan.actions:
        if action.kind in (ADD, REPLACE) and action.source and (action.source.relative, action.source.sha256) in failed:
            action.kind, action.detail = SKIPPED, "failed before and unchanged since"


def failed_files(plan: SyncPlan) -> set[tuple[str, str]]:
    return {(a.source.relative, a.source.sha256) for a in plan.actions if a.status == "failed" and a.source}
