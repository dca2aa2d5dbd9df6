"""Stage times: each stage charged its own time, per thread and per file, and nothing outside a recording."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from backend.stage_times import carrying_file, charge, recording, stage, working_on


def _busy(seconds: float) -> None:
    time.sleep(seconds)


def test_a_stage_is_charged_its_own_time_without_the_stages_inside_it():
    with recording() as times:
        with stage("open_parse"):
            _busy(0.05)
            with stage("formulas"):
                _busy(0.1)
    assert 0.04 < times.seconds["open_parse"] < 0.09
    assert 0.09 < times.seconds["formulas"] < 0.15


def test_a_decorated_function_is_timed_on_every_call():
    @stage("tables")
    def find() -> int:
        _busy(0.02)
        return 1

    with recording() as times:
        assert find() + find() == 2
    assert 0.035 < times.seconds["tables"] < 0.08


def test_threads_add_up_and_pool_work_is_charged_to_the_file_that_sent_it():
    def recognise(page: int) -> int:
        with stage("ocr_recognition"):
            _busy(0.05)
        return page

    with recording() as times, ThreadPoolExecutor(2) as pool:
        with working_on("scan.pdf"):
            assert list(pool.map(carrying_file(recognise), [1, 2])) == [1, 2]
        charge("embedding", 0.5, "scan.pdf")
    assert 0.09 < times.seconds["ocr_recognition"] < 0.15  # two threads busy 0.05 s each
    assert 0.09 < times.by_file["scan.pdf"]["ocr_recognition"] < 0.15
    assert times.by_file["scan.pdf"]["embedding"] == 0.5 and "embedding" not in times.seconds


def test_nothing_is_recorded_outside_a_recording():
    with stage("open_parse"):
        pass
    with recording() as times:
        pass
    charge("embedding", 1.0, "a.pdf")
    assert not times.seconds and not times.by_file
