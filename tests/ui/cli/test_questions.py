"""``main.py search`` and ``ask`` over several knowledge bases, as a user runs them (real processes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import make_settings
from tests.support.text_pdf import write_text_pdf
from tests.ui.cli.test_commands import run

pytestmark = pytest.mark.slow


def test_search_and_ask_across_kbs(tmp_path: Path) -> None:
    from backend.service import DocLens

    data = tmp_path / "data"
    with DocLens(make_settings(data)) as service:  # the library made in-process: only the questions are runs
        for kb, name, sentence in (
            ("harbour", "lighthouse.pdf", "The Verity lighthouse was first lit in 1871 by Ada Quill."),
            ("mountain", "observatory.pdf", "The Sable observatory stands at a height of 3120 metres."),
        ):
            service.create_kb(kb)
            assert service.ingest(kb, [write_text_pdf(tmp_path / name, [[sentence]])])[0].status == "indexed"

    searched = run(["search", "--kb", "harbour,mountain", "--json", "lighthouse lit 1871 observatory height"], data)
    assert searched.returncode == 0, searched.stderr
    found = {(s["kb"], s["file"]) for s in json.loads(searched.stdout)["sources"]}
    assert found == {("harbour", "lighthouse.pdf"), ("mountain", "observatory.pdf")}

    asked = run(["ask", "--all-kbs", "--doc", "harbour/lighthouse.pdf", "When was the lighthouse lit?"], data)
    assert asked.returncode == 0, asked.stderr
    assert "harbour: lighthouse.pdf p1" in asked.stdout and "observatory" not in asked.stdout
