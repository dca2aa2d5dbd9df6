"""What ``sync`` must do to make a knowledge base hold exactly the PDFs of a folder: a pure plan.

Documents are named as ``ingest`` names a folder's files (``backend/ingestion/uploads.py``): by the
file's own name, and a second file of one name in another subfolder (``2023/report.pdf``,
``2024/report.pdf``) as ``report (2).pdf``. Files are taken in the order of their paths relative to the
folder, so the same folder always gives the same names and a second sync finds nothing to do.

A document is recognised by its content (SHA-256) first: the same content under a new name is a rename
(its stored vectors are kept, nothing is embedded again); then by name: new content under a known name
replaces that document; a document of neither kind is removed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from backend.ingestion.uploads import file_sha256, numbered_name
from backend.knowledge_bases.names import clean_file_name
from backend.types import DocumentInfo

ADD, REPLACE, RENAME, REMOVE = "add", "replace", "rename", "remove"
UNCHANGED, DUPLICATE, UNREADABLE, SKIPPED = "unchanged", "duplicate", "unreadable", "skipped"
CHANGES = (REMOVE, RENAME, REPLACE, ADD)  # also the order they are applied in: a name is freed before reuse


@dataclass(frozen=True)
class FolderFile:
    """A PDF of the synced folder."""

    relative: str  # its path relative to the folder, "/"-separated
    path: Path
    sha256: str  # "" when it could not be read
    signature: tuple[int, int] = (0, 0)  # (size, mtime in ns): whether it changed since it was hashed


@dataclass
class SyncAction:
    kind: str  # one of CHANGES, or UNCHANGED / DUPLICATE / UNREADABLE / SKIPPED (nothing to do)
    name: str  # the document's name once done (removed: the name it had)
    source: Optional[FolderFile] = None  # the folder's file (not for a removal)
    doc: Optional[DocumentInfo] = None  # the knowledge base's document it concerns (not for an addition)
    status: str = "planned"  # once applied: "done" or "failed" (and "duplicate" of a skipped copy)
    detail: str = ""  # what was done (pages, chunks) or why it failed

    @property
    def old_name(self) -> str:
        return self.doc.file if self.doc is not None else ""


@dataclass
class SyncPlan:
    actions: list[SyncAction] = field(default_factory=list)

    def of(self, *kinds: str) -> list[SyncAction]:
        return [a for a in self.actions if a.kind in kinds]

    @property
    def changes(self) -> list[SyncAction]:
        """What is to be done, in the order it is done."""
        return sorted(self.of(*CHANGES), key=lambda a: CHANGES.index(a.kind))

    @property
    def in_sync(self) -> bool:
        return not self.changes


class HashCache:
    """Digests by path and (size, mtime): a watched folder is hashed again only where a file changed."""

    def __init__(self) -> None:
        self._known: dict[Path, tuple[tuple[int, int], str]] = {}

    def sha256(self, path: Path, signature: tuple[int, int]) -> str:
        known = self._known.get(path)
        if known is not None and known[0] == signature:
            return known[1]
        digest = file_sha256(path)
        self._known[path] = (signature, digest)
        return digest


def folder_signatures(folder: Path) -> dict[Path, tuple[int, int]]:
    """The folder's PDFs (subfolders included, as ``ingest`` finds them) and their (size, mtime): cheap,
    nothing is read."""
    found = {}
    for path in folder.rglob("*"):
        if path.suffix.lower() != ".pdf":
            continue
        try:
            stat = path.stat()
        except OSError:  # gone since it was listed: the next sync sees it again
            continue
        if path.is_file():
            found[path] = (stat.st_size, stat.st_mtime_ns)
    return found


def list_folder(folder: Path, hashes: Optional[HashCache] = None) -> list[FolderFile]:
    """The folder's PDFs with their digests, in the order of their paths relative to the folder."""
    hashes = hashes or HashCache()
    found = []
    for path, signature in folder_signatures(folder).items():
        try:
            digest = hashes.sha256(path, signature)
        except OSError:  # unreadable now (or gone): its document, if any, is kept as it is
            digest = ""
        found.append(FolderFile(path.relative_to(folder).as_posix(), path, digest, signature))
    return sorted(found, key=lambda f: f.relative)


def document_names(files: Sequence[FolderFile]) -> dict[str, str]:
    """Each file's document name: its own, and ``<name> (2).pdf`` … for the second file of a name."""
    own = {f.relative: clean_file_name(Path(f.relative).name) for f in files}
    reserved = set(own.values())
    given: dict[str, str] = {}
    used: set[str] = set()
    for f in files:  # sorted by path: the first of a name keeps it
        name = own[f.relative]
        if name in used:
            name = numbered_name(name, lambda n: n in used or n in reserved)
        used.add(name)
        given[f.relative] = name
    return given


def plan_sync(files: Sequence[FolderFile], documents: Sequence[DocumentInfo]) -> SyncPlan:
    """The actions that turn ``documents`` (the knowledge base's complete ones) into ``files``."""
    names = document_names(files)
    by_sha = {d.sha256: d for d in documents}
    claimed: set[str] = set()  # doc_ids a file keeps (unchanged, renamed or replaced)
    first_of: dict[str, str] = {}  # sha256 -> the name of the folder's first file of that content
    plan = SyncPlan()
    new: list[FolderFile] = []
    for f in files:
        name = names[f.relative]
        if f.sha256 and f.sha256 in first_of:  # ingest keeps one document per content, too
            plan.actions.append(SyncAction(DUPLICATE, name, f, detail=f"the same content as {first_of[f.sha256]}"))
            continue
        first_of[f.sha256] = name
        doc = by_sha.get(f.sha256)
        if doc is None:
            new.append(f)
            continue
        claimed.add(doc.doc_id)
        plan.actions.append(SyncAction(UNCHANGED if doc.file == name else RENAME, name, f, doc))
    by_name: dict[str, DocumentInfo] = {}
    for d in documents:
        if d.doc_id not in claimed:
            by_name.setdefault(d.file, d)
    for f in new:
        doc = by_name.pop(names[f.relative], None)
        if doc is not None:
            claimed.add(doc.doc_id)
        if not f.sha256:  # a file that cannot be read keeps its previous version, if it had one
            plan.actions.append(SyncAction(UNREADABLE, names[f.relative], f, doc, detail="cannot be read"))
        else:
            plan.actions.append(SyncAction(ADD if doc is None else REPLACE, names[f.relative], f, doc))
    plan.actions.extend(SyncAction(REMOVE, d.file, doc=d) for d in documents if d.doc_id not in claimed)
    return plan
