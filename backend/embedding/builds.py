"""Model folders built once into the cache: atomically (a folder is complete or absent), one builder at a
time across threads and processes, and readable by the other users of a shared cache."""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from backend.errors import EmbeddingError, one_line

TMP_PREFIX = ".building-"

# Who wants to hear how far a build is (the service's model banner, the CLI's bar): each gets
# (what is built, the step it is in, the fraction of that build done when the step starts).
BuildListener = Callable[[str, str, float], None]
_LISTENERS: list[BuildListener] = []
_LISTENERS_LOCK = threading.Lock()


def add_build_listener(listener: BuildListener) -> None:
    with _LISTENERS_LOCK:
        _LISTENERS.append(listener)


def remove_build_listener(listener: BuildListener) -> None:
    with _LISTENERS_LOCK:
        if listener in _LISTENERS:
            _LISTENERS.remove(listener)


def report_step(what: str, step: str, done: float) -> None:
    """A builder starts ``step`` with ``done`` (0..1) of its work behind it; a listener's failure is
    logged, never the build's."""
    with _LISTENERS_LOCK:
        listeners = list(_LISTENERS)
    for listener in listeners:
        try:
            listener(what, step, done)
        except Exception:  # noqa: BLE001 - progress display must not break a build
            logging.getLogger(__name__).exception("build progress listener failed")


def build_once(target: Path, marker: str, build: Callable[[Path], Path], what: str) -> Path:
    """Build ``target`` unless it is complete (has ``marker``); one builder at a time across threads and
    processes, and every failure becomes one EmbeddingError line naming ``what``.

    ``build(work)`` gets an empty scratch folder next to ``target`` and returns the finished folder inside
    it (``marker`` written last); that folder is renamed into place, so ``target`` is complete or absent.
    """
    if (target / marker).is_file():
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with _build_lock(target.parent / f".{target.name}.lock"):
            if not (target / marker).is_file():  # else someone else finished while we waited
                _remove_stale_builds(target.parent, target.name, marker)
                _build_atomically(target, build)
    except EmbeddingError:
        raise
    except OSError as exc:
        raise EmbeddingError(f"{what}: cannot build in {target.parent} ({exc.strerror or exc})") from None
    except Exception as exc:  # noqa: BLE001 - any builder failure becomes one line for the user
        raise EmbeddingError(f"{what}: build failed ({one_line(exc)})") from None
    return target


def _build_atomically(target: Path, build: Callable[[Path], Path]) -> None:
    work = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{target.name}-", dir=target.parent))
    try:
        finished = build(work)
        _make_shareable(finished)
        os.rename(finished, target)  # atomic: the folder is complete or absent
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextmanager
def _build_lock(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _remove_stale_builds(cache_dir: Path, name: str, marker: str) -> None:
    """Leftovers of interrupted builds (we hold the lock, so nobody else is building)."""
    for leftover in cache_dir.glob(f"{TMP_PREFIX}{name}-*"):
        shutil.rmtree(leftover, ignore_errors=True)
    broken = cache_dir / name
    if broken.exists() and not (broken / marker).is_file():
        shutil.rmtree(broken, ignore_errors=True)


def _make_shareable(folder: Path) -> None:
    """mkdtemp and some writers create private files; the cache may serve other users' processes."""
    umask = _current_umask()
    folder.chmod(0o777 & ~umask)
    for path in folder.rglob("*"):
        path.chmod((0o777 if path.is_dir() else 0o666) & ~umask)


def _current_umask() -> int:
    # Read, not set: os.umask() would briefly change it for every thread of the process.
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022
