"""Files crossing the web boundary: what a web user may ingest, and what the page may download.

Ingest: only files Gradio's own ``/upload`` route received (``Blocks.upload_file_set``), inside its upload
folder, regular files after resolving symlinks. A FileData dict naming any other server path is refused
with one message that does not say whether the path exists. Each received file is used once: the request
claims it (moves it into this server's ``doclens-claimed/<id>/``), and it is deleted as soon as it was
indexed or refused; whatever is left is deleted when the server stops.

Download: the app passes no ``allowed_paths`` to Gradio, so nothing under the data folder is served
directly. Each image the page shows (a figure, a page preview) is linked into this server's folder
``doclens-shown/<id>/`` inside Gradio's upload folder under an unguessable name; only that copy is served.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import os
import secrets
import shutil
import threading
import uuid
from pathlib import Path
from typing import Any, Iterable, Optional

from gradio.utils import get_upload_folder

from backend.errors import DocLensError

log = logging.getLogger(__name__)

NOT_RECEIVED = (
    "a file was not received by this server's upload: upload PDFs through the page or with gradio_client.handle_file"
)
SERVED_FOLDER = "doclens-shown"
CLAIMED_FOLDER = "doclens-claimed"  # uploads taken by a request, until indexed or refused
SHARED_FOLDERS = (SERVED_FOLDER, CLAIMED_FOLDER)  # parents of each server's own folder: never removed


class UploadRefused(DocLensError):
    """A web request named a file that Gradio's upload did not receive."""


def file_entries(files: Any) -> list[tuple[str, str]]:
    """(path, user's file name) from FileData dicts, FileData objects or plain paths."""
    entries = []
    for item in files or []:
        if isinstance(item, dict):
            path = str(item.get("path") or "")
            name = item.get("orig_name") or ""
        else:
            path = str(getattr(item, "path", None) or item)
            name = getattr(item, "orig_name", None) or ""
        if path:
            entries.append((path, name or Path(path).name))
    return entries


class ReceivedUploads:
    """The gate between a web request and the ingester (see the module docstring)."""

    def __init__(self, blocks: Any = None, upload_dir: Optional[Path] = None):
        self.blocks = blocks  # the running gr.Blocks; its /upload route fills blocks.upload_file_set
        self.upload_dir = Path(upload_dir or get_upload_folder())
        # this server's own claims: another DocLens sharing the upload folder has its own
        self.claimed = self.upload_dir.resolve() / CLAIMED_FOLDER / secrets.token_hex(8)

    def _received(self) -> set[str]:
        return getattr(self.blocks, "upload_file_set", None) or set()

    def admit(self, files: Any) -> tuple[list[Path], list[str]]:
        """Paths and names to ingest; UploadRefused (all files discarded) if any was not received.

        Admitted files are claimed: moved out of Gradio's content-addressed place into a folder of their
        own, so the same file uploaded again by someone else meanwhile is that user's own upload.
        """
        entries = file_entries(files)
        received = {os.path.abspath(p) for p in self._received()}
        root = self.upload_dir.resolve()
        for path, _ in entries:
            real = Path(os.path.realpath(path))
            if (
                os.path.abspath(path) not in received
                or not real.is_relative_to(root)
                or not real.is_file()
                or real.is_relative_to(root / CLAIMED_FOLDER)
            ):
                self.discard(p for p, _ in entries)  # the caller logs the refusal (one line)
                raise UploadRefused(NOT_RECEIVED)
        return [self._claim(path, root) for path, _ in entries], [Path(name).name for _, name in entries]

    def _claim(self, path: str, root: Path) -> Path:
        real = Path(os.path.realpath(path))
        target = self.claimed / uuid.uuid4().hex / real.name
        target.parent.mkdir(parents=True)
        os.replace(real, target)
        self._received().discard(path)
        _remove_inside(real, root)  # its emptied hash folder
        return target

    def discard(self, paths: Iterable[Any]) -> None:
        """Delete received or claimed files (and their emptied folders); never touches anything else."""
        received = self._received()
        root = self.upload_dir.resolve()
        for path in paths:
            given = os.path.abspath(str(path))
            if Path(given).is_relative_to(self.claimed):
                _remove_inside(Path(given), self.claimed)
            for name in {p for p in received if os.path.abspath(p) == given}:
                received.discard(name)
                _remove_inside(Path(name), root)

    def discard_all(self) -> None:
        """At server stop: every received file not yet used, and this server's claims still there."""
        self.discard(list(self._received()))
        _remove_tree(self.claimed)


def _remove_inside(path: Path, root: Path) -> None:
    """Remove ``path`` (never a link's target outside ``root``) and the folders it leaves empty below
    ``root``."""
    real = Path(os.path.realpath(path))
    if not real.is_relative_to(root) or real == root:
        return
    try:
        real.unlink(missing_ok=True)
        folder = real.parent
        while (
            folder != root
            and folder.is_relative_to(root)
            and folder.name not in SHARED_FOLDERS
            and not any(folder.iterdir())
        ):
            folder.rmdir()
            folder = folder.parent
    except OSError as exc:
        log.warning("could not remove an uploaded file: %s", exc.strerror or exc)


def _remove_tree(folder: Path) -> None:
    """This server's own folder, and its shared parent if that is left empty."""
    shutil.rmtree(folder, ignore_errors=True)
    with contextlib.suppress(OSError):  # another server's folder is still in it
        folder.parent.rmdir()


class ShownFiles:
    """Images the page shows, linked into one narrow folder Gradio serves (see the module docstring)."""

    def __init__(self, upload_dir: Optional[Path] = None):
        self.folder = Path(upload_dir or get_upload_folder()) / SERVED_FOLDER / secrets.token_hex(8)
        self._salt = secrets.token_bytes(16)  # names nobody can derive from a data-folder path
        self._lock = threading.Lock()

    def show(self, path: Any) -> Optional[str]:
        """The path to hand to Gradio for ``path``: a link (or copy) inside the served folder; None if
        the file is gone."""
        source = Path(str(path))
        try:
            stat = source.stat()
        except OSError:
            return None
        key = f"{os.path.realpath(source)}|{stat.st_size}|{stat.st_mtime_ns}".encode()
        name = hmac.new(self._salt, key, hashlib.sha256).hexdigest()[:40] + source.suffix.lower()
        target = self.folder / name
        with self._lock:
            if not target.exists():
                self.folder.mkdir(parents=True, exist_ok=True)
                _link_or_copy(source, target)
        return str(target)

    def clear(self) -> None:
        _remove_tree(self.folder)


def _link_or_copy(source: Path, target: Path) -> None:
    partial = target.with_name(target.name + ".part")
    try:
        os.link(source, partial)
    except OSError:  # another file system, or links not allowed
        shutil.copyfile(source, partial)
    os.replace(partial, target)


_shown: Optional[ShownFiles] = None
_shown_lock = threading.Lock()


def shown_files() -> ShownFiles:
    """The process's one served folder (every handler links into the same place, cleared at stop)."""
    global _shown
    with _shown_lock:
        if _shown is None:
            _shown = ShownFiles()
        return _shown
