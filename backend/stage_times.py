"""Where ingest time goes: seconds per stage (and per file), measured only while a benchmark records.

Stages nest (formulas are read while a page is parsed; OCR detection runs inside an OCR page): each
stage is charged its own time, without the stages inside it, so the stages add up to the work done.
Threads add up too: two OCR threads busy for 10 s are 20 s of OCR. Outside ``recording`` a stage
costs one global read.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from contextlib import contextmanager
from typing import Callable, Iterator, Optional, TypeVar

T = TypeVar("T")

# The stages the pipeline reports, in pipeline order (``waiting`` is time a thread only waited for another).
STAGES = (
    "open_parse",
    "layout",
    "ocr_rendering",
    "ocr_detection",
    "ocr_recognition",
    "ocr_other",
    "tables",
    "figures",
    "formulas",
    "chunking",
    "embedding",
    "storing",
)
WAITING = "waiting"


class StageTimes:
    """Seconds per stage, and per file and stage, added up across threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.seconds: dict[str, float] = defaultdict(float)
        self.by_file: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))

    def add(self, stage: str, seconds: float, file: str = "") -> None:
        with self._lock:
            self.seconds[stage] += seconds
            if file:
                self.by_file[file][stage] += seconds

    def add_to_file(self, stage: str, seconds: float, file: str) -> None:
        """A file's share of time already added to the stage's total."""
        with self._lock:
            self.by_file[file][stage] += seconds


_recording: Optional[StageTimes] = None
_local = threading.local()  # this thread's open stages (a stack) and the file it works on


@contextmanager
def recording() -> Iterator[StageTimes]:
    """Stage times are recorded while this is open (one recording at a time: it is a benchmark's)."""
    global _recording
    times = StageTimes()
    _recording = times
    try:
        yield times
    finally:
        _recording = None


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Charges the time inside to ``name``, less what stages opened inside it took."""
    times = _recording
    if times is None:
        yield
        return
    stack = _stack()
    stack.append(0.0)  # the time of the stages inside this one
    started = time.perf_counter()
    try:
        yield
    finally:
        spent = time.perf_counter() - started
        inner = stack.pop()
        if stack:
            stack[-1] += spent
        times.add(name, spent - inner, current_file())


@contextmanager
def working_on(file: str) -> Iterator[None]:
    """Stages on this thread are charged to ``file`` too."""
    before = current_file()
    _local.file = file
    try:
        yield
    finally:
        _local.file = before


def charge(stage_name: str, seconds: float, file: str) -> None:
    """Charges ``file`` its share of time a stage spent on several files at once (counted once already)."""
    times = _recording
    if times is not None:
        times.add_to_file(stage_name, seconds, file)


def current_file() -> str:
    return getattr(_local, "file", "")


def carrying_file(work: Callable[..., T]) -> Callable[..., T]:
    """``work`` for another thread (a pool's), charged to the file this thread works on now."""
    file = current_file()

    def run(*args, **kwargs) -> T:
        with working_on(file):
            return work(*args, **kwargs)

    return run


def _stack() -> list[float]:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack
