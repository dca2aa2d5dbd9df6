"""Knowledge bases: one Milvus collection plus one folder (both named ``kb_<hex>``) per display name.

Their lifecycle: listing, creating, opening (``OpenKB``), renaming, deleting, and recovering what a crash
left half-done; one writer at a time per knowledge base, and a delete that waits for it.
"""

from __future__ import annotations

import logging
import shutil
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from backend.errors import DocLensError, KnowledgeBaseDeleted, KnowledgeBaseError
from backend.knowledge_bases import names
from backend.knowledge_bases.open_kb import OpenKB, kb_deleted_message, stale_parsed
from backend.knowledge_bases.registry import Registry
from backend.store.base import CollectionInfo, VectorStore
from backend.types import KnowledgeBase

log = logging.getLogger(__name__)


@dataclass
class _Use:
    """Shared by everyone holding one knowledge base open: its writer lock and its deleted flag."""

    writer: threading.Lock = field(default_factory=threading.Lock)
    deleted: threading.Event = field(default_factory=threading.Event)


class KnowledgeBases:
    def __init__(self, store: VectorStore, data_dir: Path, embedding_signature: Callable[[], tuple[str, int]]):
        self.store = store
        self.root = data_dir / "kbs"
        self._embedding_signature = embedding_signature  # (model id, dim), may load the model: call late
        self._registries: dict[str, Registry] = {}
        self._uses: dict[str, _Use] = {}
        self._guard = threading.Lock()  # the two dicts, and a delete against a registry created meanwhile

    def folder(self, collection: str) -> Path:
        return self.root / collection

    def registry(self, collection: str) -> Registry:
        with self._guard:
            if self._use(collection).deleted.is_set():  # being deleted, or restored and not whole yet
                raise KnowledgeBaseDeleted("the knowledge base was deleted")
            if collection not in self._registries:
                if not self.store.has_collection(collection):
                    raise KnowledgeBaseDeleted("the knowledge base was deleted")  # never re-create its folder
                self._registries[collection] = Registry(self.folder(collection))
            return self._registries[collection]

    def _use(self, collection: str) -> _Use:
        return self._uses.setdefault(collection, _Use())

    @contextmanager
    def writing(self, kb: OpenKB) -> Iterator[None]:
        """Held for a whole upload: uploads to one knowledge base run one after the other (so each sees
        what the one before stored), and a delete waits until the upload has noticed and rolled back."""
        with self._guard:
            use = self._use(kb.collection)
        with use.writer:
            if kb.deleted.is_set() or not self.store.has_collection(kb.collection):
                raise KnowledgeBaseDeleted(kb_deleted_message(kb))
            yield

    def check_exists(self, kb: OpenKB) -> None:
        """Raise KnowledgeBaseDeleted if ``kb`` was deleted since it was opened (to explain a failure)."""
        if kb.deleted.is_set() or not self.store.has_collection(kb.collection):
            raise KnowledgeBaseDeleted(kb_deleted_message(kb))

    @contextmanager
    def deletion_explained(self, *kbs: OpenKB) -> Iterator[None]:
        """A failure of work on ``kbs`` says "was deleted" when one was, not the store's "collection ...
        does not exist"."""
        try:
            yield
        except DocLensError:
            for kb in kbs:
                self.check_exists(kb)
            raise

    def seal(self, kb: OpenKB) -> None:
        """Fresh rows go into indexed segments now (after an upload), not on the next restart."""
        try:
            self.store.seal(kb.collection)
        except DocLensError as exc:  # a knowledge base deleted meanwhile has nothing left to seal
            log.info("knowledge base %r not sealed: %s", kb.name, exc)

    # -- listing ------------------------------------------------------------------------------

    def list(self) -> list[KnowledgeBase]:
        kbs = []
        for info in self.store.list_collections():
            name = names.display_name(info.name)
            if name is None:
                continue  # not ours: never listed or touched
            try:
                documents, chunks = self.registry(info.name).totals()
            except KnowledgeBaseDeleted:
                continue  # being deleted (or restored, and not whole yet)
            kbs.append(
                KnowledgeBase(
                    name=name,
                    collection=info.name,
                    documents=documents,
                    chunks=chunks,
                    embedding_model=info.embedding_model,
                    dim=info.dim,
                )
            )
        return sorted(kbs, key=lambda kb: kb.name.casefold())

    def open(self, name: str, check_model: bool = True) -> OpenKB:
        clean = names.normalize_name(name)
        collection = names.collection_name_unchecked(clean)
        info = self.store.describe(collection) if clean else None  # one collection, not all: every search opens
        if info is None:
            raise KnowledgeBaseError(f"knowledge base '{clean}' does not exist")
        if check_model:
            self._check_model(clean, info)
        registry = self.registry(collection)
        with self._guard:
            deleted = self._use(collection).deleted
        return OpenKB(clean, collection, self.folder(collection), info, registry, self.store, deleted)

    def _check_model(self, name: str, info: CollectionInfo) -> None:
        model, dim = self._embedding_signature()
        if info.embedding_model != model or info.dim != dim:
            raise KnowledgeBaseError(
                f"knowledge base '{name}' was built with embedding model {info.embedding_model} ({info.dim} dims) "
                f"but {model} ({dim} dims) is configured: set embedding.model to {info.embedding_model} "
                f"(or DOCLENS_EMBEDDING_MODEL) to use it, or create a new knowledge base and upload the "
                f"documents again"
            )

    def recover(self) -> None:
        """Remove what a crash left half-done: documents still pending get no rows, files or entries; the
        pages they had parsed are kept for the same file's next upload (for a week: ``stale_parsed``)."""
        for listed in self.list():
            pending = self.registry(listed.collection).unfinished_ids()
            stale = stale_parsed(self.folder(listed.collection) / "parsed")
            if not pending and not stale:
                continue
            kb = self.open(listed.name, check_model=False)
            for path in stale:
                kb.forget_parsed(path.stem)
            if pending:
                log.warning(
                    "knowledge base %r: %d unfinished document(s) from an interrupted upload", listed.name, len(pending)
                )
            for doc_id in pending:
                _recover_document(kb, doc_id)

    # -- changes ------------------------------------------------------------------------------

    def create(self, name: str) -> KnowledgeBase:
        clean = names.validate_name(name)
        collection = names.collection_name(clean)
        if self.store.has_collection(collection):
            raise KnowledgeBaseError(f"knowledge base '{clean}' already exists")
        self._check_distinct(clean, f"cannot create '{clean}'")
        model, dim = self._embedding_signature()
        self.discard_stale_folder(collection)
        self.store.create_collection(collection, dim, model)
        self.registry(collection)
        log.info("created knowledge base %r as %s (%s, %d dims)", clean, collection, model, dim)
        return KnowledgeBase(clean, collection, 0, 0, model, dim)

    def rename(self, old: str, new: str) -> KnowledgeBase:
        source = self.open(old, check_model=False)
        target_name = names.validate_name(new)
        target = names.collection_name(target_name)
        if target == source.collection:
            raise KnowledgeBaseError(f"knowledge base '{source.name}' already has that name")
        if self.store.has_collection(target):
            raise KnowledgeBaseError(f"cannot rename '{source.name}': knowledge base '{target_name}' already exists")
        self._check_distinct(target_name, f"cannot rename '{source.name}' to '{target_name}'", source.collection)
        self.discard_stale_folder(target)
        self.store.rename_collection(source.collection, target)
        with self._guard:
            self._registries.pop(source.collection, None)
        if source.folder.exists():
            source.folder.rename(self.folder(target))
        log.info("renamed knowledge base %r to %r", source.name, target_name)
        return next(kb for kb in self.list() if kb.collection == target)

    def delete(self, name: str) -> None:
        """For good: nothing of it is left on disk (the trash moves a user's deletion aside instead)."""
        with self.taken_away(name) as kb:
            self.store.drop_collection(kb.collection)
            shutil.rmtree(kb.folder, ignore_errors=True)
        log.info("deleted knowledge base %r", kb.name)

    @contextmanager
    def taken_away(self, name: str) -> Iterator[OpenKB]:
        """The knowledge base, no longer listed nor opened, once no upload runs into it: running uploads see
        the flag at their next page or batch, roll back and stop; questions that fail meanwhile say it was
        deleted. The block drops or moves its collection and folder."""
        kb = self.open(name, check_model=False)
        with self._guard:
            use = self._use(kb.collection)
            use.deleted.set()  # under the guard: no registry is created for it from now on
        try:
            with use.writer:  # waits for a running upload to finish its rollback
                yield kb
        finally:
            with self._guard:
                self._registries.pop(kb.collection, None)
                self._uses.pop(kb.collection, None)  # a knowledge base of that name (new or restored) starts afresh

    @contextmanager
    def arriving(self, collection: str) -> Iterator[None]:
        """A knowledge base being brought back under ``collection``: not listed nor opened until it is whole."""
        with self._guard:
            self._use(collection).deleted.set()
        try:
            yield
        finally:
            with self._guard:
                self._registries.pop(collection, None)
                self._uses.pop(collection, None)

    def check_name_free(self, name: str, refused: str) -> str:
        """The collection of ``name``, when no knowledge base has that name (or one differing only in case)."""
        clean = names.validate_name(name)
        collection = names.collection_name(clean)
        if self.store.has_collection(collection):
            raise KnowledgeBaseError(f"{refused}: knowledge base '{clean}' already exists; choose another name")
        self._check_distinct(clean, refused)
        return collection

    def _check_distinct(self, name: str, refused: str, renamed: str = "") -> None:
        """Refuse a name that differs from another knowledge base's only in case (or width): the two could
        not be told apart in a list. ``renamed``: the collection being renamed, which may change its case."""
        key = names.name_key(name)
        for info in self.store.list_collections():
            other = names.display_name(info.name)
            if other is not None and info.name != renamed and names.name_key(other) == key:
                raise KnowledgeBaseError(
                    f"{refused}: knowledge base '{other}' already exists, and names that differ only in case "
                    f"(or in the width of their characters) are not told apart; choose another name"
                )

    def discard_stale_folder(self, collection: str) -> None:
        """A folder without a collection is a leftover (e.g. a crash during delete): never reuse its data."""
        folder = self.folder(collection)
        if folder.exists():
            log.warning("removing leftover folder %s of a knowledge base that no longer exists", folder)
            shutil.rmtree(folder, ignore_errors=True)


def _recover_document(kb: OpenKB, doc_id: str) -> None:
    """A pending document goes; the pages it had parsed and its original stay: the app's next start (or
    ``main.py ingest --resume``, or the same file uploaded again) resumes after them."""
    if not kb.parsed_pages(doc_id).is_file():
        kb.remove_document(doc_id)
        return
    doc = kb.registry.document(doc_id)
    name = doc.file if doc else doc_id
    log.warning("%s: the pages read before the interruption are kept, to resume from", name)
    kb.interrupt_document(doc_id)
