"""A knowledge base in the trash, on disk: ``<data_dir>/trash/<id>/entry.json`` (what it was, who deleted it,
and how far a move has come) beside ``<data_dir>/trash/<id>/kb/`` (its folder, moved there whole).

Its collection is renamed ``trash_<id>``: not a ``kb_`` name, so it is neither listed nor searched, and the
name it had is free for a new knowledge base. The entry is written before each move and its ``state`` says
which move was under way, so start-up can finish or undo a move a crash cut short (``Trash.recover``).
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

from backend.errors import KnowledgeBaseError

ENTRY_FILE = "entry.json"
KB_FOLDER = "kb"
TRASH_PREFIX = "trash_"
MOVING_IN = "moving_in"  # its collection and folder are being moved into the trash
TRASHED = "trashed"
RESTORING = "restoring"  # being moved back (to ``target``)
PURGING = "purging"  # its collection and folder are being removed for good


def new_id(kind: str) -> str:
    """``k`` (a knowledge base) or ``d`` (a document) and 8 hex digits: short enough to type."""
    return kind + secrets.token_hex(4)


@dataclass
class KBEntry:
    id: str
    name: str  # the display name it had
    collection: str  # the collection it had (``kb_`` + hex of ``name``)
    deleted_at: float
    deleted_by: str
    documents: int
    chunks: int
    state: str = MOVING_IN
    target: str = ""  # while restoring: the collection it gets back
    target_name: str = ""

    @property
    def trash_collection(self) -> str:
        return TRASH_PREFIX + self.id

    def folder(self, root: Path) -> Path:
        return root / self.id

    def kept_folder(self, root: Path) -> Path:
        return root / self.id / KB_FOLDER

    def save(self, root: Path) -> None:
        """Written whole or not at all (a crash leaves the previous state)."""
        folder = self.folder(root)
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / (ENTRY_FILE + ".part")
        with open(partial, "w", encoding="utf-8") as file:
            json.dump(asdict(self), file, ensure_ascii=False)
            file.flush()
            os.fsync(file.fileno())
        partial.replace(folder / ENTRY_FILE)


def load_entry(folder: Path) -> Optional[KBEntry]:
    """None when the folder has no entry (a crash before the first one was written)."""
    try:
        data = json.loads((folder / ENTRY_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise KnowledgeBaseError(f"trash entry {folder / ENTRY_FILE} is unreadable: {exc}") from None
    return KBEntry(**{k: v for k, v in data.items() if k in KBEntry.__dataclass_fields__})


def load_entries(root: Path) -> list[KBEntry]:
    if not root.is_dir():
        return []
    entries = [load_entry(folder) for folder in sorted(root.iterdir()) if folder.is_dir()]
    return [e for e in entries if e is not None]


def move_folder(source: Path, target: Path) -> None:
    """One rename inside the data folder (atomic); nothing to do when it has moved already."""
    if source.exists() and not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        source.rename(target)
