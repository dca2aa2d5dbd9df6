"""What only the embedded Milvus Lite needs: its engine process, its lock, its messages."""

from __future__ import annotations

import contextlib
import logging
import warnings
from pathlib import Path
from typing import Optional

from backend.errors import one_line as _short

log = logging.getLogger(__name__)

with warnings.catch_warnings():  # milvus-lite 2.5 imports pkg_resources, which warns on every start
    warnings.simplefilter("ignore", UserWarning)
    with contextlib.suppress(ImportError):  # a server-only installation has no milvus_lite
        import milvus_lite  # noqa: F401


class _NoRenameInLite(logging.Filter):
    """Milvus Lite (a file, or served over TCP) has no rename: pymilvus logs that answer as an ERROR with a
    traceback, while ``MilvusStore.rename_collection`` copies the collection instead and succeeds."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not ("[rename_collections]" in message and "UNIMPLEMENTED" in message)


logging.getLogger("pymilvus.decorators").addFilter(_NoRenameInLite())


def made_by_lite3(store: Path) -> bool:
    """A Lite 3.x store is a folder; Lite 2.5 makes a file (a missing store is a new one)."""
    return store.is_dir()


def is_lite(uri: str) -> bool:
    return not uri.startswith(("http://", "https://", "tcp://", "grpc://"))


def release_lite_store(uri: str) -> None:
    """``MilvusClient.close`` leaves the in-process Lite server running and its folder locked until exit:
    stop it, so that another process (the CLI next to a test, a restarted worker) can open the store."""
    try:
        from milvus_lite.server_manager import server_manager_instance
    except ImportError:
        return
    release = getattr(server_manager_instance, "release_server", None)
    if release is not None:
        release(uri)


def lite_engine_is_2x() -> bool:
    try:
        import milvus_lite.server  # noqa: F401  (only Lite 2.x has it: the C++ engine)
    except ImportError:
        return False
    return True


def served_here(uri: str) -> bool:
    """This process runs the store's engine already: probing its lock would drop it (POSIX locks)."""
    try:
        from milvus_lite.server_manager import server_manager_instance
    except ImportError:
        return False
    return str(Path(uri).absolute().resolve()) in getattr(server_manager_instance, "_servers", {})


def store_locked(uri: str) -> bool:
    """Milvus Lite 3.x holds a flock on ``LOCK`` in its folder; Lite 2.x a POSIX lock on ``.<file>.lock``."""
    import fcntl

    store = Path(uri)
    for lock_file, lock, unlock in [
        (store / "LOCK", fcntl.flock, fcntl.flock),
        (store.parent / f".{store.name}.lock", fcntl.lockf, fcntl.lockf),
    ]:
        try:
            with open(lock_file, "ab") as handle:
                lock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                unlock(handle, fcntl.LOCK_UN)
        except (BlockingIOError, PermissionError):
            return True
        except OSError:
            continue
    return False


def connect_failure(uri: str, lite: bool, exc: Optional[Exception]) -> str:
    if lite and store_locked(uri):
        return (
            f"the Milvus Lite store {uri} is in use by another DocLens process. To share one store, "
            f"serve it with `python -m backend.store.lite_server --store {uri} --port 19530` and set "
            f"DOCLENS_MILVUS_URI=http://127.0.0.1:19530 for every process, or use a Milvus server "
            f"(README: Scaling out)"
        )
    if lite:
        return f"cannot open the Milvus Lite store {uri}: {_short(exc)}"
    return f"cannot reach Milvus at {uri}: {_short(exc)} (is the server running? is DOCLENS_MILVUS_TOKEN right?)"
