"""ui/common.py: the document pickers over a large library."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import pytest
from gradio.utils import MatplotlibBackendMananger

from backend.knowledge_bases.registry import Registry
from backend.quality.bench_page import registered_documents
from backend.service import DocLens
from tests.conftest import make_settings
from ui.common import (
    PICKER_CHOICES,
    LatestOnly,
    doc_filter_dropdown,
    has_document,
    no_matplotlib_probe,
    picker_matches,
)


def test_a_picked_document_is_kept_when_many_names_contain_its_name(tmp_path: Path) -> None:
    """Noticed in issue 27: has_document looked only at the first PICKER_CHOICES names containing the
    pick, so "a.pdf" behind "0000a.pdf" … "0149a.pdf" was dropped from the Chat tab's filter."""
    with DocLens(make_settings(tmp_path / "data")) as service:
        kb = service.create_kb("many")
        names = [f"{i:04d}a.pdf" for i in range(PICKER_CHOICES + 50)] + ["a.pdf"]
        Registry(tmp_path / "data" / "kbs" / kb.collection).add_documents(
            registered_documents(len(names), lambda i: names[i])
        )
        assert has_document(service, "many", "a.pdf")
        assert not has_document(service, "many", "b.pdf")
        update = doc_filter_dropdown(service, "many", ["a.pdf"])
        assert update["value"] == ["a.pdf"] and "a.pdf" in update["choices"]


def test_only_a_browsers_newest_key_changes_its_picker() -> None:
    """Under load the picker's list ended on an older prefix's names: Gradio's "always_last" re-sent the
    first waiting key's text. Each key now sends its own request; an overtaken one changes nothing."""
    newest = LatestOnly(remembered=2)
    first, second = newest.start("a"), newest.start("a")
    other = newest.start("b")
    assert not newest.is_newest("a", first) and newest.is_newest("a", second) and newest.is_newest("b", other)
    newest.start("c")  # "a" forgotten: its answer is let through rather than lost
    assert newest.is_newest("a", first)


def test_arrow_keys_leave_the_pickers_list_alone(tmp_path: Path) -> None:
    """New choices landing after ArrowDown dropped the option it reached (Enter then kept the typed text)."""
    with DocLens(make_settings(tmp_path / "data")) as service:
        kb = service.create_kb("few")
        Registry(tmp_path / "data" / "kbs" / kb.collection).add_documents(
            registered_documents(3, lambda i: f"paper {i}.pdf")
        )
        matches = picker_matches(service)
        browser = SimpleNamespace(session_hash="s1", username=None)
        typed = gr.KeyUpData(None, {"key": "2", "input_value": "paper 2"})
        assert matches("few", None, typed, browser)["choices"] == ["paper 2.pdf"]
        for key in ("ArrowDown", "Enter"):
            arrow = gr.KeyUpData(None, {"key": key, "input_value": "paper 2"})
            assert matches("few", None, arrow, browser) == gr.skip()


class _SearchesRecorded(importlib.abc.MetaPathFinder):
    def __init__(self) -> None:
        self.names: list[str] = []

    def find_spec(self, fullname, path, target=None):  # noqa: ANN001 - the finder protocol
        self.names.append(fullname)
        return None


def test_an_event_step_does_not_search_for_matplotlib_again(monkeypatch) -> None:
    """bench-load under py-spy: Gradio's MatplotlibBackendMananger, entered around every event step and
    streamed message, searched all of sys.path for matplotlib each time (a fifth of the server's thread)."""
    if importlib.util.find_spec("matplotlib") is not None:
        pytest.skip("matplotlib is installed: Gradio's import finds it at once")
    searches = _SearchesRecorded()
    monkeypatch.setattr(sys, "meta_path", [searches, *sys.meta_path])
    was_marked = "matplotlib" in sys.modules
    try:
        no_matplotlib_probe()
        searches.names.clear()  # its one search, at the start
        with MatplotlibBackendMananger():
            pass
        assert "matplotlib" not in searches.names
    finally:
        if not was_marked:
            sys.modules.pop("matplotlib", None)
