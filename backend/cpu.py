"""What the CPU offers: instruction-set flags (which number formats are fast) and usable cores; how
many malloc arenas the process keeps; and questions before uploads on the few cores there are."""

from __future__ import annotations

import ctypes
import functools
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """The flags /proc/cpuinfo lists (empty where there is no such file)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    flags: set[str] = set()
    for line in text.splitlines():
        if line.startswith("flags"):
            flags.update(line.partition(":")[2].split())
    return frozenset(flags)


def has_any_flag(*names: str) -> bool:
    flags = cpu_flags()
    return any(name in flags for name in names)


def usable_cpus() -> int:
    """Cores this process may run on (its affinity mask, not the machine's total)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


M_ARENA_MAX = -8  # glibc's mallopt() parameter for the number of malloc arenas


def limit_malloc_arenas(arenas: int = 2) -> bool:
    """Cap glibc's malloc arenas (default: up to 8 per core, one per busy thread). OCR workers, the read-ahead
    thread and the inference thread pools otherwise each keep the freed buffers of rendered pages in an
    arena of their own: peak memory on 20 scanned pages fell from 3.3 to 2.6 GB with two, and no slower."""
    try:
        return bool(ctypes.CDLL("libc.so.6").mallopt(M_ARENA_MAX, arenas))
    except (OSError, AttributeError):  # not glibc: its allocator has its own policy
        return False


# An upload's next page or embedding batch waits at most this long for the questions on the CPU: on two cores
# a question beside an upload took 1.4x as long (bench-load); the upload still advances under steady questions.
UPLOAD_YIELD_S = 1.0


class _QuestionsOnCPU:
    def __init__(self) -> None:
        self.count = 0
        self.changed = threading.Condition()


_QUESTIONS = _QuestionsOnCPU()


@contextmanager
def question_on_cpu() -> Iterator[None]:
    """Mark a question's CPU work (its embedding, the search, the ranking): uploads let it pass."""
    with _QUESTIONS.changed:
        _QUESTIONS.count += 1
    try:
        yield
    finally:
        with _QUESTIONS.changed:
            _QUESTIONS.count -= 1
            _QUESTIONS.changed.notify_all()


def let_questions_pass(max_wait: float = UPLOAD_YIELD_S) -> float:
    """Before an upload's next heavy step: wait while questions use the CPU, at most ``max_wait`` seconds.
    Returns the seconds waited."""
    started = time.monotonic()
    with _QUESTIONS.changed:
        while _QUESTIONS.count:
            left = started + max_wait - time.monotonic()
            if left <= 0:
                break
            _QUESTIONS.changed.wait(left)
    return time.monotonic() - started
