"""How the process gives native memory back (glibc malloc), so that one ingest's peak stays bounded.

OCR and the layout model run on ONNX Runtime without its memory arena: every model run allocates its
activations afresh (tens to hundreds of MB, a new size for each page and text line). glibc serves a freed
block of that size from the heap next time and raises its mmap threshold up to 32 MB, so the freed
blocks of every shape stay in the process: a 2-page scan peaked at 2.7 GB. With the threshold fixed at
its starting value, large blocks are mapped and unmapped each time (what ORT's own arena would do,
without keeping them), and a trim after each page returns what smaller blocks left free.
"""

from __future__ import annotations

import ctypes
import functools
import logging

from backend.cpu import limit_malloc_arenas

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1  # glibc mallopt() parameters
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 128 * 1024  # glibc's own starting value, no longer raised as large blocks are freed


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt  # noqa: B018 - only glibc has it
        libc.malloc_trim  # noqa: B018
        return libc
    except (OSError, AttributeError):  # not glibc: its allocator has its own policy
        return None


@functools.lru_cache(maxsize=1)
def bound_native_heap() -> bool:
    """Large blocks go back to the system when freed; few malloc arenas. Once per process, before the
    models load; True where the C library is glibc."""
    libc = _libc()
    if libc is None:
        return False
    done = bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(libc.mallopt(M_TRIM_THRESHOLD, MMAP_THRESHOLD))
    limit_malloc_arenas()
    log.debug("native heap bounded: %s", done)
    return done


def return_free_memory() -> None:
    """Give the free pages of every malloc arena back to the system (after a page's OCR)."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
