"""Files crossing the web boundary: what a web user may ingest, and what the page may download.

Ingest: only files Gradio's own ``/upload`` route received (``Blocks.upload_file_set``), inside its upload
folder, regular files after resolving symlinks. A FileData dict naming any other server path is refused
with one message that names the file as the caller called it and does not say whether the path exists
(also when Gradio itself refuses it, before any handler runs). Each upload is used once: Gradio keeps
identical files (the same file picked twice, two users uploading the same file) in one content-addressed
place, so ``UploadCounts`` counts how often /upload received each path, and each use takes one. A request
claims what it uses by a hard link (or a copy) into a folder of its own, ``doclens-claimed/<id>/<request>/``,
removed when the request is done; Gradio's file is deleted once every upload of it was used, and whatever
is left is deleted when the server stops.

Download: the app passes no ``allowed_paths`` to Gradio, so nothing under the data folder is served
directly. Each image the page shows (a figure, a page preview) is linked into this server's folder
``doclens-shown/<id>/`` inside Gradio's upload folder under an unguessable name; only that copy is served.
A document's original is offered the same way, under its file name inside a folder of an unguessable name,
and only a PDF the knowledge base stored (the documents table finds it on the server, from the row drawn).
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
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Optional

import gradio as gr
from gradio.exceptions import InvalidPathError
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


def refused(names: Iterable[str]) -> str:
    """The refusal, naming the files as the caller called them (never the server path)."""
    return f"{', '.join(dict.fromkeys(names)) or 'a file'}: {NOT_RECEIVED}"


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
            entries.append((path, Path(name or path).name))
    return entries


class UploadCounts(set):
    """Gradio's ``Blocks.upload_file_set`` (a set of paths), counting how often /upload received each one:
    identical uploads land on one path, and each of them is one use."""

    def __init__(self, paths: Iterable[Any] = ()) -> None:
        super().__init__(paths)
        self.lock = threading.Lock()
        self._counts: Counter[str] = Counter(os.path.abspath(str(p)) for p in self)

    def update(self, *groups: Iterable[Any]) -> None:  # what Gradio's /upload route calls
        with self.lock:
            for group in groups:
                for path in group:
                    super().add(path)
                    self._counts[os.path.abspath(str(path))] += 1

    def add(self, path: Any) -> None:
        self.update([path])

    def uses_left(self, path: str) -> int:
        return self._counts[os.path.abspath(path)]

    def take(self, path: str) -> None:
        self._counts[os.path.abspath(path)] -= 1

    def forget(self, path: str) -> list[str]:
        """No more uses of ``path``; the names it was recorded under."""
        given = os.path.abspath(path)
        self._counts.pop(given, None)
        names = [p for p in self if os.path.abspath(str(p)) == given]
        for name in names:
            self.discard(name)
        return names


class ReceivedUploads:
    """The gate between a web request and the ingester (see the module docstring)."""

    def __init__(self, blocks: Any = None, upload_dir: Optional[Path] = None):
        self.blocks = blocks  # the running gr.Blocks; its /upload route fills blocks.upload_file_set
        self.upload_dir = Path(upload_dir or get_upload_folder())
        # this server's own claims: another DocLens sharing the upload folder has its own
        self.claimed = self.upload_dir.resolve() / CLAIMED_FOLDER / secrets.token_hex(8)
        self.received = UploadCounts(getattr(blocks, "upload_file_set", None) or ())
        if blocks is not None:
            _count_uploads(blocks, self.received)
            _name_gradio_refusals(blocks)

    def admit(self, files: Any) -> tuple[list[Path], list[str]]:
        """Paths and names to ingest; UploadRefused (naming the files; the others of the request are used
        up too) if any was not received. What is admitted is claimed: linked into a folder of this request's
        own, so nobody else's use of the same upload can take it away; ``discard`` ends the claim."""
        entries = file_entries(files)
        request = self.claimed / uuid.uuid4().hex
        taken: dict[str, tuple[str, Optional[int]]] = {}  # received path -> (its real path, its inode)
        with self.received.lock:
            not_received = [name for path, name in entries if not self._admissible(path)]
            claims = [self._claim(path, request / str(index), taken) for index, (path, _) in enumerate(entries)]
            self._drop_used(taken)
        if not_received:
            self.discard(c for c in claims if c is not None)  # the caller logs the refusal (one line)
            raise UploadRefused(refused(not_received))
        return [c for c in claims if c is not None], [name for _, name in entries]

    def _admissible(self, path: str) -> bool:
        root = self.upload_dir.resolve()
        real = Path(os.path.realpath(path))
        return (
            self.received.uses_left(path) > 0
            and real.is_relative_to(root)
            and real.is_file()
            and not real.is_relative_to(root / CLAIMED_FOLDER)
        )

    def _claim(self, path: str, folder: Path, taken: dict[str, tuple[str, Optional[int]]]) -> Optional[Path]:
        """A link of the request's own to a received file, taking one use of it; a file named again in the
        same request beyond its uploads is the same file again (linked, no use taken). None: not received."""
        given = os.path.abspath(path)
        if self._admissible(path):
            self.received.take(path)
            real = os.path.realpath(path)
            taken.setdefault(given, (real, _inode(real)))
        elif given in taken:
            real = taken[given][0]
        else:
            return None
        target = folder / Path(real).name
        folder.mkdir(parents=True)
        _link_or_copy(Path(real), target)
        return target

    def _drop_used(self, taken: dict[str, tuple[str, Optional[int]]]) -> None:
        """Gradio's files whose every upload is used now leave its folder (not one a new upload of the same
        file put there meanwhile: another inode)."""
        root = self.upload_dir.resolve()
        for given, (real, inode) in taken.items():
            if self.received.uses_left(given) <= 0 and _inode(real) == inode:
                self.received.forget(given)
                _remove_inside(Path(real), root)

    def discard(self, paths: Iterable[Any]) -> None:
        """End claims (and delete received files not used yet); never touches anything else."""
        root = self.upload_dir.resolve()
        for path in paths:
            given = Path(os.path.abspath(str(path)))
            if given.is_relative_to(self.claimed):
                _remove_inside(given, self.claimed)
                continue
            with self.received.lock:
                names = self.received.forget(str(given))
            for name in names:
                _remove_inside(Path(name), root)

    def discard_all(self) -> None:
        """At server stop: every received file not yet used, and this server's claims still there."""
        self.discard(list(self.received))
        _remove_tree(self.claimed)


def _count_uploads(blocks: Any, counts: UploadCounts) -> None:
    """Put the counting set where Gradio's /upload route and its cleanup look for the set of uploads."""
    original = blocks.upload_file_set
    blocks.upload_file_set = counts
    blocks.temp_file_sets = [counts if s is original else s for s in blocks.temp_file_sets]


def _name_gradio_refusals(blocks: Any) -> None:
    """Gradio refuses a FileData (with ``meta``) naming a server path before any handler runs, and the
    caller reads an empty error; this gives it ours, naming the file."""
    preprocess = blocks.preprocess_data

    async def preprocess_data(block_fn: Any, inputs: list[Any], state: Any, explicit_call: bool = False) -> Any:
        try:
            return await preprocess(block_fn, inputs, state, explicit_call)
        except InvalidPathError:
            message = refused(name for _, name in file_entries(_file_dicts(inputs)))
            log.info("upload refused (by Gradio's check): %s", message)
            raise gr.Error(message, print_exception=False) from None

    blocks.preprocess_data = preprocess_data


def _file_dicts(value: Any) -> list[dict]:
    """Every dict with a ``path`` inside an event's inputs."""
    if isinstance(value, dict):
        return [value] if "path" in value else [d for v in value.values() for d in _file_dicts(v)]
    if isinstance(value, (list, tuple)):
        return [d for v in value for d in _file_dicts(v)]
    return []


def _inode(path: str) -> Optional[int]:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


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
        token = self._token(source)
        return None if token is None else self._link(source, self.folder / (token + source.suffix.lower()))

    def offer(self, path: Any, name: str) -> Optional[str]:
        """The path to hand to a download for ``path``, named ``name`` (its last part only); None if the
        file is gone."""
        source = Path(str(path))
        token = self._token(source)
        safe = Path(str(name).replace("\\", "/")).name.strip() or source.name
        return None if token is None else self._link(source, self.folder / token / safe)

    def offer_text(self, name: str, content: str) -> str:
        """Text made for a download (an exported conversation), named ``name``, in a folder of its own."""
        target = self.folder / secrets.token_hex(20) / Path(name).name
        target.parent.mkdir(parents=True)
        target.write_text(content, encoding="utf-8")
        return str(target)

    def _token(self, source: Path) -> Optional[str]:
        """A name nobody can derive from the data-folder path, new when the file changes; None if it is gone."""
        try:
            stat = source.stat()
        except OSError:
            return None
        key = f"{os.path.realpath(source)}|{stat.st_size}|{stat.st_mtime_ns}".encode()
        return hmac.new(self._salt, key, hashlib.sha256).hexdigest()[:40]

    def _link(self, source: Path, target: Path) -> str:
        with self._lock:
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
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
