"""bench-start on a tiny bench-search library: a real `main.py serve`, timed to the page and to the first
answer through the page's API (figures are printed by the benchmark, never asserted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.errors import DocLensError
from backend.quality.bench_search import build_kb, engine_tag
from backend.quality.bench_start import run, table
from tests.backend.quality.test_bench_search import tiny_base
from tests.conftest import make_settings


def test_a_start_is_timed_to_the_page_and_to_the_first_answer(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "data")
    with pytest.raises(DocLensError, match="bench-search --chunks 150"):
        run(settings, 150, 1)  # no library of that size yet: says how to build it
    folder = settings.data_dir / "bench-search" / engine_tag(settings) / "lite-150"
    build_kb(make_settings(folder), tiny_base(), 150)
    (folder / "complete").write_text("built\n")
    report = run(settings, 150, 1)
    [start] = report["runs"]
    # The page shown while the app starts comes first (ui/starting_page.py), then the app's own.
    assert 0 < start["page_s"] <= start["app_page_s"] <= start["first_answer_s"] == report["first_answer_max_s"]
    assert "| median |" in table(report)
