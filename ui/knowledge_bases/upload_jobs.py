"""Uploads as server-side jobs: they outlive the page that started them, so a reload can re-attach.

A job is keyed by (user, knowledge base): the same user reloading the page finds their running upload
again (its progress and Cancel). Without a login each browser is a user of its own (an id in its local
storage). The uploads a restart cut short are resumed as jobs of nobody's (``RESUMED``): every page on
their knowledge base follows them, and anyone who may add documents there may cancel them.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

from backend.service import LOCAL, RESUME, DocLens
from backend.types import IngestResult, Pace, ProgressEvent, Rate

log = logging.getLogger(__name__)

IngestFunction = Callable[..., list[IngestResult]]
KEEP_FINISHED_SECONDS = 600  # a finished job is kept a while so the page polling it sees the result
RESUMED = "resumed"  # the owner of the uploads resumed at start; no browser's or login's key looks like it


@dataclass
class FileState:
    """One file of an upload as far as the job knows it: its pages and chunks once parsed, its result."""

    name: str
    event: Optional[ProgressEvent] = None
    fraction: float = 0.0  # the furthest it got: a file's progress never goes back
    pages: int = 0
    chunks: int = 0
    result: Optional[IngestResult] = None


@dataclass
class UploadJob:
    user: str
    kb: str
    names: list[str]
    who: str = LOCAL  # the login the service checks
    cancel: threading.Event = field(default_factory=threading.Event)
    cancelled_files: set[int] = field(default_factory=set)  # places of the files cancelled one by one
    event: Optional[ProgressEvent] = None
    results: Optional[list[IngestResult]] = None
    error: Optional[BaseException] = None
    finished_at: float = 0.0
    done: threading.Event = field(default_factory=threading.Event)
    files: list[FileState] = field(default_factory=list)
    shown_fraction: float = 0.0
    listed_cancellable: Optional[list[tuple[str, int]]] = None  # what the page's file picker was last sent
    pace: Pace = field(default_factory=Pace)
    rate: Optional[Rate] = None  # of the stage in hand: pages/s and the time its file still takes
    result_shown: bool = False  # a page showed how it ended

    def __post_init__(self) -> None:
        self.files = [FileState(name) for name in self.names]

    @property
    def running(self) -> bool:
        return not self.done.is_set()

    @property
    def fraction(self) -> float:
        """The whole upload, file by file (small files wait to be embedded together, so they do not finish
        in order): it never goes back."""
        if not self.running or not self.files:
            return 1.0 if not self.running else 0.0
        now = sum(1.0 if f.result is not None else f.fraction for f in self.files) / len(self.files)
        self.shown_fraction = max(self.shown_fraction, min(1.0, now))
        return self.shown_fraction

    def record(self, event: ProgressEvent) -> None:
        self.event = event
        self.rate = self.pace.update(event)
        if event.stage == "done" or not 0 < event.file_index <= len(self.files):
            return
        state = self.files[event.file_index - 1]
        state.event = event
        state.fraction = max(state.fraction, event.file_fraction)
        if event.stage in ("parse", "ocr"):
            state.pages = event.total
        elif event.stage == "embed":
            state.chunks = event.total

    def record_result(self, place: int, result: IngestResult) -> None:
        if 0 <= place < len(self.files):
            self.files[place].result = result

    def file_progress(self, file: str) -> Optional[FileState]:
        """What the job knows of ``file`` while it is in flight (for its "being indexed" row)."""
        if not self.running:
            return None
        return next((f for f in self.files if f.name == file and f.result is None and f.event is not None), None)

    def cancellable(self) -> list[tuple[str, int]]:
        """(name, place) of the files not finished nor cancelled yet: each can be cancelled alone."""
        if not self.running or self.cancel.is_set():
            return []
        return [
            (f.name, place)
            for place, f in enumerate(self.files)
            if f.result is None and place not in self.cancelled_files
        ]

    def cancel_file(self, place: int) -> bool:
        if place not in {p for _, p in self.cancellable()}:
            return False
        self.cancelled_files.add(place)
        return True


class UploadJobs:
    """The registry of upload jobs of this server process."""

    def __init__(self, ingest: IngestFunction):
        self._ingest = ingest
        self._jobs: dict[tuple[str, str], UploadJob] = {}
        self._lock = threading.Lock()

    def start(
        self,
        user: str,
        kb: str,
        paths: Sequence[Path],
        names: Sequence[str],
        who: str = LOCAL,
        ingest: Optional[IngestFunction] = None,
    ) -> Optional[UploadJob]:
        """Start an upload in the background; None when this user already uploads into this KB. ``who``:
        the login the service checks (``user`` also tells browsers apart without logins); ``ingest``: the
        work, when it is not this registry's (a resumed upload)."""
        with self._lock:
            self._forget_old()
            current = self._jobs.get((user, kb))
            if current is not None and current.running:
                return None
            job = UploadJob(user, kb, list(names), who=who)
            self._jobs[(user, kb)] = job
        work = ingest or self._ingest
        thread = threading.Thread(
            target=self._run, args=(job, list(paths), work), name=f"doclens-upload-{kb}", daemon=True
        )
        thread.start()
        return job

    def _run(self, job: UploadJob, paths: list[Path], ingest: IngestFunction) -> None:
        try:
            job.results = ingest(
                job.kb,
                paths,
                progress=job.record,
                cancel=job.cancel,
                display_names=job.names,
                on_result=job.record_result,
                cancel_files=job.cancelled_files,
                who=job.who,
            )
        except Exception as exc:  # shown to the user by the page polling the job
            job.error = exc
        finally:
            job.finished_at = time.monotonic()
            job.done.set()

    def get(self, user: str, kb: Optional[str]) -> Optional[UploadJob]:
        with self._lock:
            return self._jobs.get((user, kb)) if kb else None

    def followed(self, user: str, kb: Optional[str]) -> Optional[UploadJob]:
        """The job a page of ``user`` on ``kb`` follows: its own while it runs or until it showed how it
        ended, else the upload resumed there at start, else its own."""
        own, resumed = self.get(user, kb), self.get(RESUMED, kb)
        if own is not None and (own.running or not own.result_shown):
            return own
        return resumed or own

    def running_in(self, kb: Optional[str]) -> list[UploadJob]:
        """Every running job of a knowledge base, whoever started it."""
        with self._lock:
            return [job for (_, name), job in self._jobs.items() if name == kb and job.running]

    def _forget_old(self) -> None:
        now = time.monotonic()
        for key, job in list(self._jobs.items()):
            if not job.running and now - job.finished_at > KEEP_FINISHED_SECONDS:
                del self._jobs[key]


def resume_interrupted(service: DocLens, jobs: UploadJobs, delay: float = 0.0) -> list[UploadJob]:
    """The uploads a kill or a restart cut short, each knowledge base's as one job that every page on it
    follows (progress, pages/s, time left, Cancel), going on from the pages they had read. ``delay``:
    seconds each waits first (shown as queued meanwhile; a cancel ends the wait)."""

    def resume(kb: str, _paths: list[Path], *, display_names: Sequence[str], who: str, **options) -> list:
        options["cancel"].wait(delay)
        results = service.resume_interrupted(kb=kb, **options)
        for result in results:
            log.info("interrupted upload resumed: %s", result.error or f"{result.file} {result.status}")
        return results

    started = []
    for kb, names in service.interrupted_uploads().items():
        job = jobs.start(RESUMED, kb, [], names, who=RESUME, ingest=resume)
        started += [job] if job is not None else []
    return started
