"""A terminal progress bar fed by the backend's progress events."""

from __future__ import annotations

import sys
from typing import Optional

from tqdm import tqdm

from backend.service import READY_STEP
from backend.types import Pace, ProgressEvent, rate_text


class TerminalProgress:
    """Callable progress sink: one bar for the whole job, its label naming the file and stage."""

    def __init__(self, enabled: bool = True, lazy: bool = False, pace: Optional[Pace] = None):
        self.enabled = enabled
        self.lazy = lazy  # a bar only while work is reported, closed when it is done (``sync``: often none)
        self._bar: Optional[tqdm] = None
        self._pace = pace or Pace()  # pages/s and the time left, in the label

    def __enter__(self) -> TerminalProgress:
        if self.enabled and not self.lazy:
            self._open()
        return self

    def _open(self) -> None:
        self._bar = tqdm(total=1000, unit="", bar_format="{l_bar}{bar}| {elapsed}<{remaining}", file=sys.stderr)

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def write(self, line: str) -> None:
        """A result line on stdout, above the bar (not through it), at once (a script reads it as it comes)."""
        tqdm.write(line, file=sys.stdout)
        sys.stdout.flush()

    def __call__(self, event: ProgressEvent) -> None:
        if self.enabled and self.lazy and self._bar is None and event.stage != "done":
            self._open()
        if self._bar is None:
            return
        if self.lazy and event.stage == "done":
            self.__exit__()
            return
        stage = {"parse": "page", "ocr": "OCR page", "embed": "embedding", "store": "storing"}.get(event.stage)
        label = f"[{event.file_index}/{event.file_count}] {event.file[:40]}"
        if stage and event.total:
            label += f" {stage} {event.current}/{event.total}"
        rate = self._pace.update(event)
        label += f" ({rate_text(rate)})" if rate is not None else ""
        self._bar.set_description_str(label, refresh=False)
        # Small files are embedded together, after the next ones were parsed: an upload's bar never goes back.
        now = int(event.fraction * 1000)
        self._bar.n = now if event.stage == "search" else max(self._bar.n, now)
        self._bar.refresh()


class ModelPreparationBar:
    """A bar for the embedding model's first-start build (minutes): appears with the build's first step."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self._bar: Optional[tqdm] = None

    def __call__(self, step: str, fraction: float) -> None:
        if not self.enabled or (step == READY_STEP and self._bar is None):
            return  # a cached model loads without a bar
        if step == READY_STEP:
            self._bar.set_description_str("embedding model ready", refresh=False)
            self._bar.n = 1000
            self.close()  # not held at "load 95%" until the command ends (serve: until shutdown)
            return
        if self._bar is None:
            self._bar = tqdm(total=1000, unit="", file=sys.stderr, bar_format="{l_bar}{bar}| {elapsed}")
        self._bar.set_description_str(f"preparing the embedding model: {step.replace(':', ' ')}", refresh=False)
        self._bar.n = int(fraction * 1000)
        self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
