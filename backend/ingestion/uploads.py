"""The files of one upload: what the user calls each one, its digest, and whether it can be read at all;
and the name a file is stored under when a different file already has its name.

A different file under a stored name replaces that document: it is taken for an updated version. Not when
the two may not really share the name: another file of the same upload has it (``2023/report.pdf`` and
``2024/report.pdf`` from a folder are both ``report.pdf``), or the name may have been cut by the upload
client (gradio_client cuts names to 200 bytes, so long names that differ only after that arrive equal).
Then the file is kept beside the other as ``<name> (2).pdf`` (``(3)``, …), and its result says why.
"""

from __future__ import annotations

import hashlib
import itertools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from backend.errors import DocLensError
from backend.knowledge_bases.names import clean_file_name

CLIENT_NAME_BYTES = 200  # gradio_client, the documented API client, cuts every file name to this many bytes


@dataclass
class UploadItem:
    path: Path
    name: str  # the name the user knows the file by (the name it is stored under, once kept apart)
    kept_apart: str = ""  # why it is stored under a new name beside a different file of its name
    exact: bool = False  # its name is the document's own, never a cut one (``sync``): never kept apart


def may_be_cut(name: str) -> bool:
    """A name the upload client may have cut (cut by characters: up to 3 bytes under the limit)."""
    return CLIENT_NAME_BYTES - 3 <= len(name.encode("utf-8")) <= CLIENT_NAME_BYTES


def keep_apart(item: UploadItem, same_upload: bool, taken: Callable[[str], bool]) -> bool:
    """For a file whose name a different stored file has: rename it ``<name> (2).pdf`` … (the first name
    not ``taken``) when the two may not share the name really (see the module docstring); True if so."""
    if item.exact:
        return False
    if same_upload:
        why = f"another file of this upload is called '{item.name}' too"
    elif may_be_cut(item.name):
        why = (
            f"a different file is already indexed as '{item.name}', and the upload client cuts names to "
            f"{CLIENT_NAME_BYTES} bytes, so the two may have had different names"
        )
    else:
        return False
    new = numbered_name(item.name, taken)
    item.kept_apart = f"{why}: this one is kept beside it as '{new}' (delete the other if this one replaces it)"
    item.name = new
    return True


def numbered_name(name: str, taken: Callable[[str], bool]) -> str:
    """``<name> (2).pdf``, ``(3)``, …: the first one not ``taken``."""
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem:
        stem, ext = name, ""
    numbered = (clean_file_name(f"{stem} ({n})" + (f".{ext}" if ext else "")) for n in itertools.count(2))
    return next(candidate for candidate in numbered if not taken(candidate))


def collect_uploads(paths: Sequence[Path], display_names: Optional[Sequence[str]] = None) -> list[UploadItem]:
    """Files as given (validated later, so a renamed .txt gets its reason) and PDFs found in folders."""
    items: list[UploadItem] = []
    for index, path in enumerate(paths):
        path = Path(path)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() == ".pdf")
            items.extend(UploadItem(p, clean_file_name(p.name)) for p in found)
        else:
            name = display_names[index] if display_names and index < len(display_names) else path.name
            items.append(UploadItem(path, clean_file_name(name)))
    return items


def doc_id_of(sha: str) -> str:
    """A document's id: its content, so the same file uploaded again is the same document (and resumes)."""
    return sha[:32]


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_readable(item: UploadItem) -> None:
    if not item.path.exists():
        raise DocLensError(f"{item.name}: file not found")
    if not item.path.is_file():
        raise DocLensError(f"{item.name}: not a file")
    if not os.access(item.path, os.R_OK):
        raise DocLensError(f"{item.name}: permission denied")
