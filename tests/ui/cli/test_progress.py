"""The command line's upload bar (ui/cli/progress.py): small files are embedded together after the next
ones were parsed, so their events come out of file order; the bar never goes back (issue 26 item 5)."""

from __future__ import annotations

from backend.embedding.builds import report_step
from backend.embedding.preparation import ModelState, watch_model_preparation
from backend.types import Pace, ProgressEvent
from tests.conftest import make_settings
from ui.cli.progress import ModelPreparationBar, TerminalProgress


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


def test_the_model_bar_ends_at_100_percent_when_the_model_is_ready(tmp_path, capsys) -> None:
    """Issue 26 item 12: the console bar stayed at "load: 95%" until shutdown. It hears the model being
    ready from the service's own preparation (ModelState.finished), closes at 100 %, and never opens for a
    cached model."""
    settings = make_settings(tmp_path)
    bar = ModelPreparationBar()
    with watch_model_preparation(settings, bar):
        state = ModelState()
        state.started(settings)
        report_step("q4", "write", 0.5)
        state.finished()  # loaded
        assert bar._bar is None, "closed when the model is ready"
    last = capsys.readouterr().err.replace("\r", "\n").strip().splitlines()[-1]
    assert "embedding model ready" in last and "100%" in last, last
    cached = ModelPreparationBar()
    with watch_model_preparation(settings, cached):
        state = ModelState()
        state.started(settings)
        state.finished()
    assert cached._bar is None and "preparing" not in capsys.readouterr().err


def test_the_upload_bar_says_how_fast_and_how_long_the_file_still_takes() -> None:
    """Issue 25 item 6: a long document (a scanned book) shows pages/s and the time left beside the bar."""
    from tests.support.clock import Clock

    clock = Clock()
    with TerminalProgress(pace=Pace(clock)) as progress:
        progress(ProgressEvent("ocr", "book.pdf", 1, 1, 1, 500))
        assert "left" not in progress._bar.desc
        clock.now += 10.0
        progress(ProgressEvent("ocr", "book.pdf", 1, 1, 5, 500))
        assert progress._bar.desc.endswith("OCR page 5/500 (0.40 pages/s, about 21 min left)"), progress._bar.desc
