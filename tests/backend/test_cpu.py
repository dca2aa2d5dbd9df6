"""CPU facts read from this machine."""

from __future__ import annotations

import os
import platform
import threading
import time

from backend.cpu import cpu_flags, has_any_flag, let_questions_pass, limit_malloc_arenas, question_on_cpu, usable_cpus


def test_flags_come_from_proc_cpuinfo() -> None:
    flags = cpu_flags()
    assert isinstance(flags, frozenset)
    if os.path.exists("/proc/cpuinfo") and os.uname().machine == "x86_64":
        assert "sse2" in flags and has_any_flag("no-such-flag", "sse2")
    assert not has_any_flag("no-such-flag")


def test_usable_cpus_follow_the_affinity_mask() -> None:
    assert 1 <= usable_cpus() <= (os.cpu_count() or 1)
    if hasattr(os, "sched_getaffinity"):
        assert usable_cpus() == len(os.sched_getaffinity(0))


def test_malloc_arenas_are_capped_on_glibc() -> None:
    assert limit_malloc_arenas(2) == (platform.libc_ver()[0] == "glibc")


def test_an_upload_lets_a_question_on_the_cpu_pass_then_goes_on() -> None:
    assert let_questions_pass(max_wait=5) < 0.1  # no question: no wait
    with question_on_cpu():
        assert 0.2 <= let_questions_pass(max_wait=0.2) < 1  # a question that goes on: the upload advances
    ended = threading.Event()

    def question() -> None:
        with question_on_cpu():
            time.sleep(0.3)
        ended.set()

    asking = threading.Thread(target=question)
    asking.start()
    time.sleep(0.05)
    waited = let_questions_pass(max_wait=5)
    asking.join()
    assert 0.2 <= waited < 2 and ended.is_set()
