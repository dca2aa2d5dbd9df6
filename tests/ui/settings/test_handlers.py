"""SettingsHandlers (ui/settings/page.py) over a real DocLens: secrets kept and never shown, invalid values
as status lines. Fixtures and helpers: tests/ui/handler_support.py.
"""

from __future__ import annotations

import json

import pytest

from backend.service import DocLens
from tests.conftest import make_settings
from tests.support.fake_openai import FakeOpenAI
from tests.ui.handler_support import (
    API_KEY,
    WARN,
    run_send,
)
from ui.icons import icon
from ui.settings.handlers import SettingsHandlers, key_status, shown_milvus_uri

pytestmark = pytest.mark.usefixtures("fake_model")  # each test starts on the fake model


def test_settings_apply_keeps_secrets_and_never_shows_them(service: DocLens, fake: FakeOpenAI) -> None:
    handlers = SettingsHandlers(service)
    embedder = service.embedder
    before = handlers.current_values()
    assert API_KEY not in repr(before) and before[3] == key_status(service.settings.llm.api_key)
    result = handlers.apply(
        fake.base_url, "qwen", "", "", "sentence_transformers", "bundled:multilingual-e5-small", "", "", "rapidocr"
    )
    assert result[0].startswith(icon("ok"))
    assert service.settings.llm.model == "qwen"
    assert service.settings.llm.api_key.get_secret_value() == API_KEY
    assert API_KEY not in repr(result) and result[4].startswith("set") and result[-2:] == ("", "")
    assert service.embedder is embedder, "an unchanged embedding keeps the loaded model"
    fake.queue_reply("Short answer [1].")
    run_send(service)
    answer_request = fake.last_chat()
    assert answer_request.body["model"] == "qwen"
    assert answer_request.header("Authorization") == f"Bearer {API_KEY}"


def test_settings_invalid_value_is_a_status_line(service: DocLens) -> None:
    before = service.settings
    result = SettingsHandlers(service).apply("", "", "", "", "sentence_transformers", "m", "", "", "no-such-engine")
    assert result[0].startswith(WARN) and "engine" in result[0]
    assert service.settings is before, "nothing was applied"


def test_the_page_config_does_not_show_the_data_folder(service: DocLens, data_dir) -> None:
    """Issue 31 item 8: Gradio serves every component's first value at /config to anyone who reaches the
    page; the Milvus field named the Lite store's path inside the data folder."""
    from ui.app import build_app

    config = json.dumps(build_app(service).get_config_file(), ensure_ascii=False, default=str)
    assert str(data_dir) not in config and str(data_dir.resolve()) not in config
    assert "embedded Milvus Lite" in config
    milvus_shown = SettingsHandlers(service).current_values()[9]
    assert milvus_shown.startswith("embedded Milvus Lite") and str(data_dir) not in milvus_shown
    server = make_settings(data_dir, DOCLENS_MILVUS_URI="http://root:Milvus@db.example:19530")
    assert shown_milvus_uri(server) == "http://db.example:19530", "a login inside the URL is not shown"


def test_test_chat_uses_the_values_typed_in_the_form(service: DocLens, fake: FakeOpenAI) -> None:
    """Issue 26 item 1: a closed port typed in the form was "✓ Connected" to the applied URL, and a newly
    typed key was tested with the old one until Apply was pressed."""
    from backend.processes import free_port

    handlers = SettingsHandlers(service)
    closed = f"http://127.0.0.1:{free_port()}/v1"
    line = handlers.check_llm(closed, "fake-chat", "", "", None, None)
    assert line.startswith(icon("fail")) and fake.base_url not in line, line
    assert service.settings.llm.base_url == fake.base_url, "testing applies nothing"
    fake.reset()
    line = handlers.check_llm(fake.base_url, "typed-model", "", "sk-typed", None, None)
    assert line.startswith(icon("ok")) and "typed-model" in line, line
    probe = fake.last_chat()
    assert probe.body["model"] == "typed-model" and probe.header("Authorization") == "Bearer sk-typed"
    line = handlers.check_vision(fake.base_url, "fake-chat", "typed-vision", "", None, None)
    assert line.startswith(icon("ok")) and fake.last_chat().body["model"] == "typed-vision", line
