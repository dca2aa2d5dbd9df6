"""ui/common.py: the document pickers over a large library."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.abc
import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Iterator

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
    queue_events,
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


@contextlib.contextmanager
def picker_on(tmp_path: Path, documents: int) -> Iterator[Callable[..., Any]]:
    """A file picker's key handler over a KB "few" of ``documents`` papers ("paper 0.pdf" ...)."""
    with DocLens(make_settings(tmp_path / "data")) as service:
        kb = service.create_kb("few")
        Registry(tmp_path / "data" / "kbs" / kb.collection).add_documents(
            registered_documents(documents, lambda i: f"paper {i}.pdf")
        )
        yield picker_matches(service)


def key(typed: str, input_value: str) -> gr.KeyUpData:
    return gr.KeyUpData(None, {"key": typed, "input_value": input_value})


def test_a_key_stamped_earlier_that_arrives_later_changes_nothing(tmp_path: Path) -> None:
    """A loaded server's event loop may read two keys' requests in either order: the browser's stamp, not
    the arrival, says which key is the newer (the older prefix's names would replace the match)."""
    with picker_on(tmp_path, 30) as matches:
        browser = SimpleNamespace(session_hash="s1", username=None)
        assert matches("few", None, "2000.5", key("2", "paper 2"), browser)["choices"][0] == "paper 2.pdf"
        assert matches("few", None, "1999.0", key(" ", "paper "), browser) == gr.skip()
        api = SimpleNamespace(session_hash="s2", username=None)  # a caller that sends no stamp: by arrival
        assert len(matches("few", None, None, key("r", "paper"), api)["choices"]) == 30
        odd = SimpleNamespace(session_hash="s3", username=None)  # a stamp that is no number: by arrival too
        assert len(matches("few", None, "nan", key("r", "paper"), odd)["choices"]) == 30


def test_arrow_keys_leave_the_pickers_list_alone(tmp_path: Path) -> None:
    """New choices landing after ArrowDown dropped the option it reached (Enter then kept the typed text)."""
    with picker_on(tmp_path, 3) as matches:
        browser = SimpleNamespace(session_hash="s1", username=None)
        assert matches("few", None, None, key("2", "paper 2"), browser)["choices"] == ["paper 2.pdf"]
        for arrow in ("ArrowDown", "Enter"):
            assert matches("few", None, None, key(arrow, "paper 2"), browser) == gr.skip()


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


def test_an_idle_app_wakes_its_event_queue_a_few_times_a_second(monkeypatch) -> None:
    """An idle `main.py serve` took a tenth of a core: Gradio's queue looked for new events every
    millisecond (strace: 1,500 wakeups a second), and for progress to send every 10 ms."""
    with gr.Blocks() as demo:
        gr.Button("go").click(lambda: None)
    queue_events(demo, concurrency=2)
    wakeups = 0
    sleep = asyncio.sleep

    async def counted(delay: float, *args: Any) -> Any:
        nonlocal wakeups
        wakeups += 1
        return await sleep(delay, *args)

    async def idle_for_a_second() -> None:
        loops = [
            asyncio.ensure_future(demo._queue.start_processing()),
            asyncio.ensure_future(demo._queue.start_progress_updates()),
        ]
        await sleep(1.0)
        demo._queue.stopped = True
        await asyncio.gather(*loops, return_exceptions=True)

    monkeypatch.setattr(asyncio, "sleep", counted)
    asyncio.run(idle_for_a_second())
    assert wakeups <= 150, wakeups
