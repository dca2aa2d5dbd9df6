"""The command line's upload bar (ui/cli/progress.py): small files are embedded together after the next
ones were parsed, so their events come out of file order; the bar never goes back (issue 26 item 5)."""

from __future__ import annotations

from backend.types import ProgressEvent
from ui.cli.progress import TerminalProgress


def test_the_upload_bar_never_goes_back_and_a_search_starts_afresh() -> None:
    events = [
        ProgressEvent("parse", "a.pdf", 1, 2, 2, 2),
        ProgressEvent("parse", "b.pdf", 2, 2, 1, 2),
        ProgressEvent("embed", "a.pdf", 1, 2, 1, 2),  # the group's embedding: the first file again
        ProgressEvent("store", "b.pdf", 2, 2, 2, 2),
    ]
    shown = []
    with TerminalProgress() as progress:
        for event in events:
            progress(event)
            shown.append(progress._bar.n)
        progress(ProgressEvent("search", current=1, total=10))
        searched = progress._bar.n
    assert shown == sorted(shown) and shown[-1] == 1000
    assert searched == 100
