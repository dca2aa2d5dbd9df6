"""Knowledge bases: one Milvus collection plus one folder (both named ``kb_<hex>``) per display name.

The knowledge base does the bookkeeping of its documents once (its folder layout, the registry entry
of each document, adding, removing and recovering them); the store only stores and deletes rows, and
the ingestor only turns files into rows. Folder layout::

    kbs/kb_<hex>/registry.sqlite3       documents, pages, figures, summaries
    kbs/kb_<hex>/files/<doc_id>.pdf     the original, by content hash (page previews are rendered from it)
    kbs/kb_<hex>/figures/<doc_id>/      figure PNGs
    kbs/kb_<hex>/previews/<doc_id>/     rendered pages (a cache)
"""

from __future__ import annotations

import logging
import shutil
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

from backend import names
from backend.errors import KnowledgeBaseDeleted, KnowledgeBaseError
from backend.store.base import ChunkRow, CollectionInfo, VectorStore
from backend.store.registry import Registry
from backend.types import DocumentInfo, Figure, KnowledgeBase, PageText

log = logging.getLogger(__name__)


@dataclass
class OpenKB:
    """A knowledge base ready for work: its names, its collection info, its registry and its documents."""

    name: str
    collection: str
    folder: Path
    info: CollectionInfo
    registry: Registry
    store: VectorStore
    deleted: threading.Event = field(default_factory=threading.Event)  # set when a delete begins

    # -- its folder ---------------------------------------------------------------------------

    def original_pdf(self, doc_id: str) -> Path:
        return self.folder / "files" / f"{doc_id}.pdf"

    def figure_dir(self, doc_id: str) -> Path:
        return self.folder / "figures" / doc_id

    def preview_dir(self, doc_id: str) -> Path:
        return self.folder / "previews" / doc_id

    # -- its documents ------------------------------------------------------------------------

    def find_document(self, file: str) -> DocumentInfo:
        """A document by the name the user knows (as given, or as stored: a long one is shortened)."""
        doc = self.registry.document_by_file(file) or self.registry.document_by_file(names.clean_file_name(file))
        if doc is None:
            raise KnowledgeBaseError(f"document '{file}' is not in knowledge base '{self.name}'")
        return doc

    def figure(self, figure_id: str) -> Figure:
        figure = next((f for f in self.registry.figures() if f.id == figure_id), None)
        if figure is None:
            raise KnowledgeBaseError(f"figure '{figure_id}' is not in knowledge base '{self.name}'")
        return figure

    def begin_document(self, doc_id: str, file: str, sha256: str) -> None:
        """Registered as pending before its first row or file is written: until ``complete_document`` it
        is searched by no one and removed by ``remove_document`` (or at start after a crash)."""
        if self.registry.document(doc_id) is not None:  # rows and files only exist under an entry
            self.remove_document(doc_id)  # leftovers of an earlier attempt at the same content
        self.registry.add_pending(doc_id, file, sha256)

    def keep_original(self, doc_id: str, source: Path) -> None:
        """The PDF is kept (by content hash, never by its name) to render page previews later."""
        target = self.original_pdf(doc_id)
        target.parent.mkdir(exist_ok=True)  # inside the knowledge base's folder, never re-created here
        partial = target.with_suffix(".part")
        shutil.copyfile(source, partial)
        partial.replace(target)

    def add_rows(self, rows: Sequence[ChunkRow]) -> None:
        self.store.insert(self.collection, list(rows))

    def complete_document(
        self,
        doc_id: str,
        pages: Sequence[PageText],
        figures: Sequence[Figure],
        chunks: int,
        page_count: int,
        check: Callable[[], None],
    ) -> None:
        """Its pages and figures are registered, then (``check`` passing: not cancelled, not deleted)
        it is marked complete, the one step that makes it visible."""
        self.registry.add_pages(doc_id, [(p.page, p.text, p.ocr) for p in pages])
        for figure in figures:
            self.registry.add_figure(figure)
        check()
        self.registry.mark_complete(
            doc_id, pages=page_count, ocr_pages=sum(p.ocr for p in pages), chunks=chunks, figures=len(figures)
        )

    def remove_document(self, doc_id: str) -> None:
        """Rows first, then files, then the registry entry: a crash in between is cleaned up at start.

        The entry is marked first so that a crash half-way never leaves a "complete" document without rows
        (e.g. the old version during a replace): start-up removes whatever is not complete.
        """
        self.registry.mark_removing(doc_id)
        self.store.delete_documents(self.collection, [doc_id])
        shutil.rmtree(self.figure_dir(doc_id), ignore_errors=True)
        shutil.rmtree(self.preview_dir(doc_id), ignore_errors=True)
        self.original_pdf(doc_id).unlink(missing_ok=True)
        self.registry.remove_document(doc_id)


def kb_deleted_message(kb: OpenKB) -> str:
    return f"the knowledge base '{kb.name}' was deleted"


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
            if collection not in self._registries:
                if self._use(collection).deleted.is_set() or not self.store.has_collection(collection):
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
                continue  # deleted while listing
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
        """Remove what a crash left half-done: documents still pending get no rows, files or entries."""
        for listed in self.list():
            pending = self.registry(listed.collection).pending_ids()
            if not pending:
                continue
            log.warning(
                "knowledge base %r: removing %d unfinished document(s) from an interrupted upload",
                listed.name,
                len(pending),
            )
            kb = self.open(listed.name, check_model=False)
            for doc_id in pending:
                kb.remove_document(doc_id)

    # -- changes ------------------------------------------------------------------------------

    def create(self, name: str) -> KnowledgeBase:
        clean = names.validate_name(name)
        collection = names.collection_name(clean)
        if self.store.has_collection(collection):
            raise KnowledgeBaseError(f"knowledge base '{clean}' already exists")
        model, dim = self._embedding_signature()
        self._discard_stale_folder(collection)
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
        self._discard_stale_folder(target)
        self.store.rename_collection(source.collection, target)
        with self._guard:
            self._registries.pop(source.collection, None)
        if source.folder.exists():
            source.folder.rename(self.folder(target))
        log.info("renamed knowledge base %r to %r", source.name, target_name)
        return next(kb for kb in self.list() if kb.collection == target)

    def delete(self, name: str) -> None:
        """Running uploads see the flag at their next page or batch, roll back and stop; questions that
        fail meanwhile say the knowledge base was deleted. Nothing of it is left on disk."""
        kb = self.open(name, check_model=False)
        with self._guard:
            use = self._use(kb.collection)
        use.deleted.set()
        with use.writer:  # waits for a running upload to finish its rollback
            with self._guard:
                self.store.drop_collection(kb.collection)
                self._registries.pop(kb.collection, None)
                shutil.rmtree(kb.folder, ignore_errors=True)
                self._uses.pop(kb.collection, None)  # a new knowledge base of that name starts afresh
        log.info("deleted knowledge base %r", kb.name)

    def _discard_stale_folder(self, collection: str) -> None:
        """A folder without a collection is a leftover (e.g. a crash during delete): never reuse its data."""
        folder = self.folder(collection)
        if folder.exists():
            log.warning("removing leftover folder %s of a knowledge base that no longer exists", folder)
            shutil.rmtree(folder, ignore_errors=True)
