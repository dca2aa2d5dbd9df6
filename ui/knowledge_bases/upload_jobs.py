"""Uploads as server-side jobs: they outlive the page that started them, so a reload can re-attach.

A job is keyed by (user, knowledge base): the same user reloading the page finds their running upload
again (its progress and Cancel). Without a login every browser is the same anonymous user.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

from backend.types import IngestResult, ProgressEvent

log = logging.getLogger(__name__)

IngestFunction = Callable[..., list[IngestResult]]
KEEP_FINISHED_SECONDS = 600  # a finished job is kept a while so the page polling it sees the result


@dataclass
class UploadJob:
    user: str
    kb: str
    names: list[str]
    cancel: threading.Event = field(default_factory=threading.Event)
    event: Optional[ProgressEvent] = None
    results: Optional[list[IngestResult]] = None
    error: Optional[BaseException] = None
    finished_at: float = 0.0
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def running(self) -> bool:
        return not self.done.is_set()

    @property
    def fraction(self) -> float:
        return self.event.fraction if self.event is not None else 0.0

    def file_progress(self, file: str) -> Optional[ProgressEvent]:
        """The latest event if it is about ``file`` (for the documents table's "being indexed" row)."""
        event = self.event
        return event if event is not None and event.file == file and self.running else None


class UploadJobs:
    """The registry of upload jobs of this server process."""

    def __init__(self, ingest: IngestFunction):
        self._ingest = ingest
        self._jobs: dict[tuple[str, str], UploadJob] = {}
        self._lock = threading.Lock()

    def start(self, user: str, kb: str, paths: Sequence[Path], names: Sequence[str]) -> Optional[UploadJob]:
        """Start an upload in the background; None when this user already uploads into this KB."""
        with self._lock:
            self._forget_old()
            current = self._jobs.get((user, kb))
            if current is not None and current.running:
                return None
            job = UploadJob(user, kb, list(names))
            self._jobs[(user, kb)] = job
        thread = threading.Thread(target=self._run, args=(job, list(paths)), name=f"doclens-upload-{kb}", daemon=True)
        thread.start()
        return job

    def _run(self, job: UploadJob, paths: list[Path]) -> None:
        def on_progress(event: ProgressEvent) -> None:
            job.event = event

        try:
            job.results = self._ingest(job.kb, paths, progress=on_progress, cancel=job.cancel, display_names=job.names)
        except Exception as exc:  # shown to the user by the page polling the job
            job.error = exc
        finally:
            job.finished_at = time.monotonic()
            job.done.set()

    def get(self, user: str, kb: Optional[str]) -> Optional[UploadJob]:
        with self._lock:
            return self._jobs.get((user, kb)) if kb else None

    def running_in(self, kb: Optional[str]) -> list[UploadJob]:
        """Every running job of a knowledge base, whoever started it."""
        with self._lock:
            return [job for (_, name), job in self._jobs.items() if name == kb and job.running]

    def cancel(self, user: str, kb: Optional[str]) -> bool:
        job = self.get(user, kb)
        if job is None or not job.running:
            return False
        job.cancel.set()
        return True

    def _forget_old(self) -> None:
        now = time.monotonic()
        for key, job in list(self._jobs.items()):
            if not job.running and now - job.finished_at > KEEP_FINISHED_SECONDS:
                del self._jobs[key]
