"""The app around the handlers (ui/app.py, ui/common.py, ui/icons.py): one-line errors, every element id,
the model banner, the first start, plain icons. Fixtures and helpers: tests/ui/handler_support.py.
"""

from __future__ import annotations

import inspect
import logging
import re
import time
from pathlib import Path

import gradio as gr
import pytest

from backend.errors import SettingsError
from backend.service import DocLens
from tests.conftest import make_settings
from tests.support.fake_openai import FakeOpenAI
from tests.ui.handler_support import (
    KB,
    WARN,
    model_env,
)
from ui.access import parse_auth
from ui.app import build_app
from ui.common import error_text, shows_errors
from ui.icons import SYMBOLS
from ui.knowledge_bases.handlers import KBHandlers

pytestmark = pytest.mark.usefixtures("fake_model")  # each test starts on the fake model


def test_unexpected_errors_are_logged_and_not_shown(caplog) -> None:
    try:
        {}["boom"]
    except KeyError as exc:
        with caplog.at_level(logging.ERROR, logger="ui.common"):
            text = error_text(exc, "answer the question")
    assert text == "could not answer the question: unexpected KeyError (details are in the server log)"
    assert "boom" in caplog.text and "Traceback" in caplog.text


def test_handlers_turn_failures_into_one_line_through_one_decorator(service: DocLens, caplog) -> None:
    @shows_errors("run the demo", outputs=lambda line, value, **_: (line, value))
    def demo(value: int, request: gr.Request = None) -> tuple:
        raise KeyError("boom")

    @shows_errors("run the demo")
    def plain(lang: str = "en") -> str:
        raise SettingsError("llm.timeout must be a number")

    with caplog.at_level(logging.ERROR, logger="doclens.ui"):
        assert demo(7) == ("could not run the demo: unexpected KeyError (details are in the server log)", 7)
    assert "Traceback" in caplog.text
    assert plain() == f"{WARN} llm.timeout must be a number"
    assert plain(lang="zh").startswith(WARN) and plain("zh") == plain(lang="zh")
    assert "progress" in inspect.signature(KBHandlers(service).selftest).parameters  # what Gradio reads
    renamed = KBHandlers(service).rename("no such kb", "other")
    assert renamed[0].startswith(WARN) and "does not exist" in renamed[0] and len(renamed) == 4


def test_parse_auth() -> None:
    assert parse_auth("alice:s3cret:x") == ("alice", "s3cret:x")
    assert parse_auth(None) is None
    with pytest.raises(SettingsError):
        parse_auth("alice")


@pytest.mark.parametrize("reserved", ["cli", "retention", "local", "resume", "CLI"])
def test_a_login_cannot_take_the_name_of_the_machine_s_own_user(reserved: str) -> None:
    """Roles let the command line and the trash's purge do everything by name: a web login of that name
    would have every right on every knowledge base."""
    with pytest.raises(SettingsError, match="reserved"):
        parse_auth(f"{reserved}:s3cret")


def test_build_app_has_every_element_id(service: DocLens) -> None:
    demo = build_app(service)
    ids = {block.elem_id for block in demo.blocks.values() if getattr(block, "elem_id", None)}
    expected = {
        "kb-select",
        "doc-filter",
        "chatbot",
        "question",
        "send",
        "clear",
        "sources",
        "confidence",
        "summary",
        "figure-gallery",
        "figure-lock",
        "figure-unlock",
        "kb-new-name",
        "kb-create",
        "kb-rename",
        "kb-delete",
        "kb-delete-confirmation-yes",
        "doc-delete-confirmation-yes",
        "upload-files",
        "upload-start",
        "upload-cancel",
        "ingest-status",
        "docs-table",
        "page-preview",
    }
    assert expected <= ids
    api_names = {fn.api_name for fn in demo.fns.values()}
    assert {"create_kb", "upload", "ask", "delete_kb"} <= api_names
    assert all(fn.api_name for fn in demo.fns.values()), "every event needs an explicit api_name"
    kb_active = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "kb-active")
    assert KB in [choice[0] for choice in kb_active.choices]  # built from the real service's list


def test_no_trigger_has_two_listeners_that_defer(service: DocLens) -> None:
    """Issue 26: pages stayed pending for good. Gradio 6.31 defers an "always_last" listener triggered
    while it runs and then dispatches the whole event again, to each of its listeners: two on one change
    (the Chat tab's KB picker had four) deferred each other without end."""
    config = build_app(service).get_config_file()
    names = {c["id"]: c.get("props", {}).get("elem_id") or c["type"] for c in config["components"]}
    deferring: dict[tuple, list[str]] = {}
    for dependency in config["dependencies"]:
        if dependency["trigger_mode"] != "always_last":
            continue
        for target, event in dependency["targets"]:
            deferring.setdefault((names.get(target, target), event), []).append(dependency["api_name"])
    assert {trigger: apis for trigger, apis in deferring.items() if len(apis) > 1} == {}


def test_model_preparation_shows_a_banner_with_the_builds_step_and_fraction(service: DocLens) -> None:
    """Item 9: while the embedding model is prepared the page says so, which step the build is in, how
    far along (reported by the build, backend/embedding/builds.py) and for how long."""
    from backend.embedding.builds import report_step
    from ui.app import model_banner

    banner, timer = model_banner(service)
    assert banner["visible"] is False and timer["active"] is False
    service.model_state.started(service.settings)
    try:
        banner, timer = model_banner(service)
        assert banner["visible"] is True and timer["active"] is True
        # "starting", not "loading the model" before the build's own steps (issue 26 item 12)
        assert "Preparing the embedding model: starting" in banner["value"]
        assert "dl-indeterminate" in banner["value"]  # no build reported: no made-up percentage
        plan = service.model_state.plan
        assert plan in (("bundled", "int8"), ("bundled",), ("q4",))  # with VNNI, float, without VNNI
        build, step, words = ("q4", "write", "writing the 4-bit ONNX model")
        if plan != ("q4",):
            build, step, words = ("bundled", "package", "packaging it for sentence-transformers")
        report_step(build, step, 0.5)
        banner, _ = model_banner(service)
        assert words in banner["value"]
        assert re.search(r'aria-valuenow="([1-9]\d?)"', banner["value"]), banner["value"]
    finally:
        service.model_state.finished()
    report_step("int8", "quantize", 0.5)  # nobody listens once the model is ready
    assert service.model_state.step == f"{build}:{step}"


def test_a_kb_is_created_without_waiting_for_the_embedding_model(tmp_path: Path) -> None:
    """Item 9: on a first start the model is built for minutes; creating a knowledge base must not wait
    (a bundled model's id and dimensions are known before it is built)."""
    empty_cache = tmp_path / "no-models-yet"
    with DocLens(make_settings(tmp_path / "data", DOCLENS_EMBEDDING_CACHE_DIR=str(empty_cache))) as fresh:
        started = time.monotonic()
        kb = fresh.create_kb("early")
        assert time.monotonic() - started < 10 and (kb.embedding_model, kb.dim) == (
            "bundled:multilingual-e5-small",
            384,
        )
        assert not empty_cache.exists() or not any(empty_cache.iterdir()), "nothing was built"
    with DocLens(make_settings(tmp_path / "data")) as ready:  # the built model agrees with what was recorded
        assert (ready.embedder.model_id, ready.embedder.dim) == (kb.embedding_model, kb.dim)
        ready.open_kb("early")


def test_fresh_install_gets_an_empty_default_kb(tmp_path: Path, fake: FakeOpenAI) -> None:
    """Item 10: the first start creates "Default" (once: deleting it later does not bring it back)."""
    from ui.app import start_first_run

    with DocLens(make_settings(tmp_path / "fresh", **model_env(fake.base_url))) as fresh:
        thread = start_first_run(fresh)
        assert thread is not None
        thread.join(120)
        assert [kb.name for kb in fresh.list_kbs()] == ["Default"]
        fresh.delete_kb("Default")
        assert start_first_run(fresh) is None and fresh.list_kbs() == []


def test_icons_need_no_emoji_font() -> None:
    """Item 16: every status icon is a plain symbol an installed non-emoji font covers (DejaVu on Debian)."""
    import subprocess

    for name, symbol in SYMBOLS.items():
        assert not 0x1F000 <= ord(symbol) <= 0x1FAFF, name
        fonts = subprocess.run(
            ["fc-list", f":charset={ord(symbol):x}", "family"], capture_output=True, text=True
        ).stdout
        assert fonts.strip() and "emoji" not in fonts.lower(), (name, symbol)
    emoji = re.compile("[\U0001f000-\U0001faff\u2705\u274c\u2b50\ufe0f]")
    for path in (Path(__file__).resolve().parents[2] / "ui").glob("*.py"):
        assert not emoji.search(path.read_text(encoding="utf-8")), f"{path.name} still shows emoji"


def test_a_page_load_reads_the_kb_list_once_for_both_tabs(service: DocLens, monkeypatch) -> None:
    """Both tabs' KB pickers and the empty state come from one read, each picker its own update: Gradio
    takes the value out of an update it is given, so one dict written to both would leave the second
    picker without its KB."""
    load = next(fn.fn for fn in build_app(service).fns.values() if fn.api_name == "page_load")
    reads, list_kbs = [], service.list_kbs
    monkeypatch.setattr(service, "list_kbs", lambda *args: reads.append(args) or list_kbs(*args))
    outputs = load(KB, None, None, None)
    pickers = [out for out in outputs if isinstance(out, dict) and out.get("value") == KB and "choices" in out]
    assert len(reads) == 1  # was three: each tab's picker and the empty state read it
    assert len(pickers) == 2 and pickers[0] is not pickers[1] and pickers[0] == pickers[1]
    assert {"visible": False} in [
        {k: v for k, v in out.items() if k != "__type__"} for out in outputs if isinstance(out, dict)
    ]
