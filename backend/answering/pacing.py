"""How often a streamed answer's text goes out: a model writes a token every 10-50 ms, and each update
costs the web app a message (and the page a redraw of the bubble, its formulas included), so the deltas
of a short while go out as one."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable, Iterable, Iterator, Optional

from backend.types import AnswerUpdate

DELTA_EVERY_S = 0.1  # text updates at most ten times a second: still a live stream to the eye


def paced(
    updates: Iterable[AnswerUpdate], every: float = DELTA_EVERY_S, clock: Callable[[], float] = time.monotonic
) -> Iterator[AnswerUpdate]:
    """The same updates, the text deltas that arrive within ``every`` seconds of the last one sent merged
    into one. The first delta goes out at once (the first word is what the user waits for); what is held
    goes out before any other update and at the end, so no text is lost or reordered."""
    held: Optional[AnswerUpdate] = None
    sent = float("-inf")
    for update in updates:
        if _text_only(update):
            held = update if held is None else replace(update, delta=held.delta + update.delta)
            if clock() - sent >= every:
                yield held
                held, sent = None, clock()
            continue
        if held is not None:
            yield held
            held = None
        yield update
    if held is not None:
        yield held


def _text_only(update: AnswerUpdate) -> bool:
    return bool(update.delta) and not update.done and update.sources is None
