"""CPU facts read from this machine."""

from __future__ import annotations

import os
import platform

from backend.cpu import cpu_flags, has_any_flag, limit_malloc_arenas, usable_cpus


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
