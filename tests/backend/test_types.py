"""The shared result types (backend/types.py): how fast a long job goes and how long it still takes."""

from __future__ import annotations

from backend.types import Pace, ProgressEvent, Rate, duration_text, rate_text
from tests.support.clock import Clock


def test_the_pace_of_a_scanned_book_and_its_time_left() -> None:
    clock = Clock()
    pace = Pace(clock)
    assert pace.update(ProgressEvent("ocr", "book.pdf", 1, 1, 1, 500)) is None, "nothing known after one page"
    clock.now += 1.0
    assert pace.update(ProgressEvent("ocr", "book.pdf", 1, 1, 2, 500)) is None, "too soon to say"
    clock.now += 9.0
    rate = pace.update(ProgressEvent("parse", "book.pdf", 1, 1, 5, 500))  # a page with a text layer counts too
    assert rate == Rate(0.4, "pages", 495 / 0.4)
    assert rate_text(rate) == "0.40 pages/s, about 21 min left"


def test_each_file_and_stage_has_its_own_pace() -> None:
    clock = Clock()
    pace = Pace(clock)
    pace.update(ProgressEvent("embed", "a.pdf", 1, 2, 0, 300))
    pace.update(ProgressEvent("parse", "b.pdf", 2, 2, 1, 10))
    clock.now += 3.0
    assert pace.update(ProgressEvent("embed", "a.pdf", 1, 2, 120, 300)) == Rate(40.0, "chunks", 4.5)
    assert pace.update(ProgressEvent("parse", "b.pdf", 2, 2, 4, 10)) == Rate(1.0, "pages", 6.0)
    assert pace.update(ProgressEvent("store", "a.pdf", 1, 2, 1, 1)) is None, "storing is not counted"


def test_durations_read_as_people_say_them() -> None:
    assert [duration_text(s) for s in (0.2, 42, 89.4, 90, 3000, 5400, 20000)] == [
        (1, "s"),
        (42, "s"),
        (89, "s"),
        (2, "min"),
        (50, "min"),
        (2, "h"),
        (6, "h"),
    ]
