"""The files of one upload: what the user calls each one, its digest, and whether it can be read at all."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from backend.errors import DocLensError
from backend.knowledge_bases.names import clean_file_name


@dataclass
class UploadItem:
    path: Path
    name: str  # the name the user knows the file by


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
