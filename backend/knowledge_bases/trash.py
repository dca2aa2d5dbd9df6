"""The trash: what a user deletes (a knowledge base, a document) is kept for ``trash.retention_days``,
hidden from every list and search, and can be restored as it was, without embedding anything again.

A knowledge base in the trash: ``trash_entries`` (its collection renamed, its folder moved aside). A document
in the trash: its registry entry marked ``trashed`` in one update (rows, pages, figures and the original kept;
searches leave out every document that is not complete). Restoring never takes a name in use: a knowledge
base whose name was taken meanwhile is restored under another name or not at all, a document whose name was
taken is refused. Every deletion, restore and purge goes to the audit log (``audit``).
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from pathlib import Path
from typing import Callable, Optional

from backend.errors import DocLensError, KnowledgeBaseError
from backend.knowledge_bases.audit import LOCAL, RETENTION, AuditLog, clean_who
from backend.knowledge_bases.lifecycle import KnowledgeBases
from backend.knowledge_bases.open_kb import OpenKB
from backend.knowledge_bases.roles import Role, Roles
from backend.knowledge_bases.trash_entries import (
    MOVING_IN,
    PURGING,
    RESTORING,
    TRASHED,
    KBEntry,
    load_entries,
    load_entry,
    move_folder,
    new_id,
)
from backend.types import DocumentInfo, KnowledgeBase, TrashEntry

log = logging.getLogger(__name__)
DAY = 86400.0


class Trash:
    def __init__(self, kbs: KnowledgeBases, data_dir: Path, retention_days: Callable[[], float]):
        self.kbs = kbs
        self.store = kbs.store
        self.root = data_dir / "trash"
        self.audit = AuditLog(data_dir)
        self._retention_days = retention_days  # read at each use: the Settings tab may change it
        self._lock = threading.RLock()  # one move into or out of the trash at a time

    # -- deleting -----------------------------------------------------------------------------

    def delete_kb(self, name: str, who: str, permanently: bool = False) -> Optional[TrashEntry]:
        """Into the trash; ``permanently`` (an evaluation's temporary knowledge base): gone at once."""
        if permanently:
            self.kbs.delete(name)
            self.audit.record(who, "delete_kb_permanently", kb=name.strip())
            return None
        with self._lock, self.kbs.taken_away(name) as kb:
            documents, chunks = kb.registry.totals()
            entry = KBEntry(new_id("k"), kb.name, kb.collection, time.time(), clean_who(who), documents, chunks)
            entry.save(self.root)
            try:
                self.store.rename_collection(kb.collection, entry.trash_collection)
            except DocLensError:
                shutil.rmtree(entry.folder(self.root), ignore_errors=True)
                raise
            move_folder(kb.folder, entry.kept_folder(self.root))
            entry.state = TRASHED
            entry.save(self.root)
        self.audit.record(who, "delete_kb", kb=entry.name, trash_id=entry.id, documents=documents, chunks=chunks)
        return self._kb_entry(entry)

    def delete_document(self, kb: OpenKB, file: str, who: str) -> TrashEntry:
        doc = kb.find_document(file)
        return self.trash_document(kb, doc, who)

    def trash_document(self, kb: OpenKB, doc: DocumentInfo, who: str) -> TrashEntry:
        """One registry update: from then on no search, figure or summary finds it."""
        trash_id, when = new_id("d"), time.time()
        if not kb.registry.trash_document(doc.doc_id, trash_id, when, clean_who(who)):
            raise KnowledgeBaseError(
                f"document '{doc.file}' is still being added to '{kb.name}'; delete it once indexed"
            )
        self.audit.record(who, "delete_document", kb=kb.name, file=doc.file, trash_id=trash_id, chunks=doc.chunks)
        log.info("moved %s of knowledge base %r to the trash (%s)", doc.file, kb.name, trash_id)
        return self._document_entry(kb.name, doc, trash_id, when, clean_who(who))

    # -- listing ------------------------------------------------------------------------------

    def entries(self) -> list[TrashEntry]:
        """Everything in the trash, the latest deletion first."""
        found = [self._kb_entry(e) for e in load_entries(self.root) if e.state == TRASHED]
        for kb in self.kbs.list():
            try:
                trashed = self.kbs.registry(kb.collection).trashed()
            except KnowledgeBaseError:
                continue  # deleted while listing
            found += [self._document_entry(kb.name, doc, tid, when, who) for doc, tid, when, who in trashed]
        return sorted(found, key=lambda e: e.deleted_at, reverse=True)

    def entry(self, entry_id: str) -> TrashEntry:
        wanted = (entry_id or "").strip()
        found = next((e for e in self.entries() if e.id == wanted), None)
        if found is None:
            raise KnowledgeBaseError(f"'{wanted}' is not in the trash (`trash list` shows what is)")
        return found

    def _kb_entry(self, entry: KBEntry) -> TrashEntry:
        expires = entry.deleted_at + self._retention_days() * DAY
        return TrashEntry(
            entry.id, "kb", entry.name, "", entry.deleted_at, entry.deleted_by, expires, entry.documents, entry.chunks
        )

    def _document_entry(self, kb: str, doc: DocumentInfo, trash_id: str, when: float, who: str) -> TrashEntry:
        expires = when + self._retention_days() * DAY
        return TrashEntry(trash_id, "document", kb, doc.file, when, who, expires, 1, doc.chunks, doc.doc_id)

    # -- restoring ----------------------------------------------------------------------------

    def restore(self, entry_id: str, who: str, new_name: Optional[str] = None) -> TrashEntry:
        """Back as it was. ``new_name``: for a knowledge base whose name is taken now."""
        with self._lock:
            found = self.entry(entry_id)
            if found.kind == "kb":
                restored = self._restore_kb(found.id, new_name)
                self.audit.record(who, "restore_kb", kb=restored.kb, deleted_as=found.kb, trash_id=found.id)
            else:
                restored = self._restore_document(found)
                self.audit.record(who, "restore_document", kb=found.kb, file=found.file, trash_id=found.id)
        return restored

    def _restore_kb(self, entry_id: str, new_name: Optional[str]) -> TrashEntry:
        entry = load_entry(self.root / entry_id)
        assert entry is not None  # listed a moment ago, under the lock
        name = (new_name or "").strip() or entry.name
        collection = self.kbs.check_name_free(name, f"cannot restore '{entry.name}' from the trash as '{name}'")
        with self.kbs.arriving(collection):
            entry.state, entry.target, entry.target_name = RESTORING, collection, name
            entry.save(self.root)
            self.kbs.discard_stale_folder(collection)
            move_folder(entry.kept_folder(self.root), self.kbs.folder(collection))
            try:
                self.store.rename_collection(entry.trash_collection, collection)
            except DocLensError:
                self._undo_restore(entry)
                raise
            shutil.rmtree(entry.folder(self.root), ignore_errors=True)
        log.info("restored knowledge base %r from the trash as %r", entry.name, name)
        return TrashEntry(
            entry.id, "kb", name, "", entry.deleted_at, entry.deleted_by, 0.0, entry.documents, entry.chunks
        )

    def _restore_document(self, found: TrashEntry) -> TrashEntry:
        kb = self.kbs.open(found.kb, check_model=False)
        taken = kb.registry.document_by_file(found.file)
        if taken is not None:
            raise KnowledgeBaseError(
                f"cannot restore '{found.file}' into '{kb.name}': a document of that name is there now; "
                f"delete that one first"
            )
        if not kb.registry.restore_document(found.doc_id):
            raise KnowledgeBaseError(f"'{found.id}' is not in the trash (`trash list` shows what is)")
        log.info("restored %s of knowledge base %r from the trash", found.file, kb.name)
        return found

    # -- purging ------------------------------------------------------------------------------

    def empty(self, who: str) -> list[TrashEntry]:
        with self._lock:
            entries = self.entries()
            for entry in entries:
                self._purge(entry, who, "empty_trash")
        return entries

    def purge_expired(self, now: Optional[float] = None) -> list[TrashEntry]:
        """What outlived the retention, removed for good (at start, and whenever the trash is used)."""
        moment = time.time() if now is None else now
        with self._lock:
            expired = [e for e in self.entries() if e.expires_at <= moment]
            for entry in expired:
                try:
                    self._purge(entry, RETENTION, "purge")
                except DocLensError as exc:  # tried again at the next start
                    log.warning("could not purge %s (%s) from the trash: %s", entry.id, entry.kb, exc)
        return expired

    def _purge(self, entry: TrashEntry, who: str, what: str) -> None:
        if entry.kind == "kb":
            kept = load_entry(self.root / entry.id)
            if kept is not None:
                kept.state = PURGING
                kept.save(self.root)
                self._finish_purge(kept)
        else:
            kb = self.kbs.open(entry.kb, check_model=False)
            kb.remove_document(entry.doc_id)  # crash-safe: marked first, start-up finishes it
        self.audit.record(who, what, kind=entry.kind, kb=entry.kb, file=entry.file, trash_id=entry.id)

    def _finish_purge(self, entry: KBEntry) -> None:
        if self.store.has_collection(entry.trash_collection):
            self.store.drop_collection(entry.trash_collection)
        shutil.rmtree(entry.folder(self.root), ignore_errors=True)
        log.info("purged knowledge base %r from the trash (%s)", entry.name, entry.id)

    # -- after a crash ------------------------------------------------------------------------

    def recover(self) -> None:
        """Finish or undo the move a crash cut short, so each knowledge base is whole in one place."""
        if not self.root.is_dir():
            return
        for folder in sorted(p for p in self.root.iterdir() if p.is_dir()):
            entry = load_entry(folder)
            if entry is None:  # killed before its first entry was written: nothing had moved
                shutil.rmtree(folder, ignore_errors=True)
            elif entry.state == MOVING_IN:
                self._recover_moving_in(entry)
            elif entry.state == RESTORING:
                self._recover_restoring(entry)
            elif entry.state == PURGING:
                self._finish_purge(entry)

    def _recover_moving_in(self, entry: KBEntry) -> None:
        if self.store.has_collection(entry.trash_collection) and self.store.has_collection(entry.collection):
            self.store.drop_collection(entry.trash_collection)  # a rename by copy (Lite 2.x) cut short
        if self.store.has_collection(entry.trash_collection):  # the collection had moved: finish the deletion
            move_folder(self.kbs.folder(entry.collection), entry.kept_folder(self.root))
            entry.state = TRASHED
            entry.save(self.root)
            self.audit.record(entry.deleted_by, "delete_kb", kb=entry.name, trash_id=entry.id, finished_at_start=True)
            log.warning("finished moving knowledge base %r to the trash after an interruption", entry.name)
            return
        move_folder(entry.kept_folder(self.root), self.kbs.folder(entry.collection))
        shutil.rmtree(entry.folder(self.root), ignore_errors=True)
        log.warning("knowledge base %r: its interrupted deletion was undone; it is still there", entry.name)

    def _recover_restoring(self, entry: KBEntry) -> None:
        if self.store.has_collection(entry.trash_collection):  # not moved back (or a copy cut short): undo
            self._undo_restore(entry)
            log.warning("knowledge base %r: its interrupted restore was undone; it is in the trash", entry.name)
            return
        if self.store.has_collection(entry.target):  # moved back: only the entry was left
            shutil.rmtree(entry.folder(self.root), ignore_errors=True)
            self.audit.record(
                entry.deleted_by, "restore_kb", kb=entry.target_name, trash_id=entry.id, finished_at_start=True
            )
            log.warning("finished restoring knowledge base %r after an interruption", entry.target_name)
            return
        log.error("trash entry %s (%r): neither its collection nor the restored one exists", entry.id, entry.name)

    def _undo_restore(self, entry: KBEntry) -> None:
        if self.store.has_collection(entry.target) and self.store.has_collection(entry.trash_collection):
            self.store.drop_collection(entry.target)  # a rename by copy cut short: the trash's copy is whole
        move_folder(self.kbs.folder(entry.target), entry.kept_folder(self.root))
        entry.state, entry.target, entry.target_name = TRASHED, "", ""
        entry.save(self.root)


class AuditedChanges:
    """The facade's destructive changes, each one in the audit log (``backend.service.DocLens`` inherits
    them: the UI and the CLI still call ``DocLens`` only). ``who``: the login, ``local`` without logins,
    ``cli`` for the command line."""

    trash: Trash
    kbs: KnowledgeBases
    roles: Roles

    def rename_kb(self, old: str, new: str, who: str = LOCAL) -> KnowledgeBase:
        self.roles.require(who, old, Role.OWNER)
        renamed = self.kbs.rename(old, new)
        self.roles.renamed(old, renamed.name)
        self.trash.audit.record(who, "rename_kb", kb=old.strip(), to=renamed.name)
        return renamed

    def delete_kb(self, name: str, who: str = LOCAL, permanently: bool = False) -> Optional[TrashEntry]:
        """Into the trash (for ``trash.retention_days``); ``permanently``: a quality check's own knowledge base.
        Its owner and shares stay with it, for a restore."""
        self.roles.require(who, name, Role.OWNER)
        return self.trash.delete_kb(name, who, permanently)

    def delete_document(self, kb_name: str, file: str, who: str = LOCAL) -> TrashEntry:
        self.roles.require(who, kb_name, Role.EDITOR)
        return self.trash.delete_document(self.kbs.open(kb_name, check_model=False), file, who)

    def trash_entries(self, who: str = LOCAL) -> list[TrashEntry]:
        """What is in the trash that ``who`` may restore (a knowledge base: its owner; a document: its
        knowledge base's editors), the latest deletion first (what outlived the retention purged first)."""
        self.trash.purge_expired()
        return [e for e in self.trash.entries() if self.roles.role(who, e.kb) >= restoring_needs(e)]

    def restore(self, entry_id: str, new_name: Optional[str] = None, who: str = LOCAL) -> TrashEntry:
        """A knowledge base or a document back from the trash; ``new_name``: for a knowledge base whose
        name was taken meanwhile (without it, that restore is refused)."""
        entry = self.trash.entry(entry_id)
        self.roles.require(who, entry.kb, restoring_needs(entry))
        restored = self.trash.restore(entry_id, who, new_name)
        if restored.kb != entry.kb:
            self.roles.renamed(entry.kb, restored.kb)
        return restored

    def empty_trash(self, who: str = LOCAL) -> list[TrashEntry]:
        self.roles.require_admin(who, "empty the trash")
        return self.trash.empty(who)


def restoring_needs(entry: TrashEntry) -> Role:
    return Role.OWNER if entry.kind == "kb" else Role.EDITOR
