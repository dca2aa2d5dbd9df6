"""Settings: config.yaml defaults, DOCLENS_* overrides, validation messages, secrets from env only."""

from pathlib import Path

import pytest
import yaml

from backend.errors import SettingsError
from backend.settings import Settings, load_settings, with_changes
from tests.conftest import REPO_ROOT

CONFIG = REPO_ROOT / "config.yaml"


def _differences(documented: dict, defaults: dict, prefix: str = "") -> list[str]:
    found = []
    for key in sorted(set(documented) | set(defaults)):
        name = prefix + key
        if key not in defaults:
            found.append(f"{name}: in config.yaml, not a setting")
        elif key not in documented:
            found.append(f"{name}: a setting config.yaml does not document")
        elif isinstance(defaults[key], dict):
            found += _differences(documented[key] or {}, defaults[key], name + ".")
        elif documented[key] != defaults[key] and not (documented[key] in ("", None) and defaults[key] in ("", None)):
            found.append(f"{name}: config.yaml says {documented[key]!r}, the default is {defaults[key]!r}")
    return found


def test_config_yaml_documents_every_default_with_its_value_and_a_comment():
    """The defaults are written once, in backend/settings.py; config.yaml documents each with the same value."""
    documented = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    defaults = Settings().model_dump(mode="json")
    assert Path(documented.pop("data_dir")) == Path(defaults.pop("data_dir"))
    assert _differences(documented, defaults) == []
    for line in CONFIG.read_text(encoding="utf-8").splitlines():
        if ":" in line and not line.lstrip().startswith("#"):
            key, _, rest = line.partition(":")
            assert "#" in rest or rest.strip() == "", f"setting without a comment: {line}"


def test_environment_overrides_are_typed(tmp_path):
    settings = load_settings(
        CONFIG,
        environ={
            "DOCLENS_DATA_DIR": str(tmp_path),
            "DOCLENS_MILVUS_URI": "http://127.0.0.1:19530",
            "DOCLENS_RETRIEVAL_DENSE_TOP_N": "12",
            "DOCLENS_RETRIEVAL_QUERY_EXPANSION": "false",
            "DOCLENS_LLM_TEMPERATURE": "0.5",
        },
    )
    assert settings.data_dir == tmp_path
    assert settings.milvus_uri == "http://127.0.0.1:19530" and not settings.is_milvus_lite
    assert settings.retrieval.dense_top_n == 12
    assert settings.retrieval.query_expansion is False
    assert settings.llm.temperature == 0.5


def test_default_milvus_is_a_lite_store_inside_data_dir(tmp_path):
    settings = load_settings(CONFIG, environ={"DOCLENS_DATA_DIR": str(tmp_path)})
    assert settings.is_milvus_lite
    assert Path(settings.milvus_uri).parent == tmp_path


def test_bad_value_names_its_key():
    with pytest.raises(SettingsError, match=r"llm\.timeout"):
        load_settings(CONFIG, environ={"DOCLENS_LLM_TIMEOUT": "soon"})
    with pytest.raises(SettingsError, match=r"ocr\.engine"):
        load_settings(CONFIG, environ={"DOCLENS_OCR_ENGINE": "tesseract9"})


def test_unknown_key_in_file_is_named(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("retrieval:\n  dense_topn: 5\n", encoding="utf-8")
    with pytest.raises(SettingsError, match=r"retrieval\.dense_topn: unknown setting"):
        load_settings(config, environ={})


def test_secrets_come_from_environment_only(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("llm:\n  api_key: sk-in-a-file\n", encoding="utf-8")
    with pytest.raises(SettingsError, match="DOCLENS_LLM_API_KEY"):
        load_settings(config, environ={})
    settings = load_settings(CONFIG, environ={"DOCLENS_LLM_API_KEY": "sk-secret-1", "DOCLENS_MILVUS_TOKEN": "root:pw"})
    assert settings.llm.api_key.get_secret_value() == "sk-secret-1"
    dumped = str(settings.public_dict()) + repr(settings) + str(settings)
    assert "sk-secret-1" not in dumped and "root:pw" not in dumped


def test_openai_variables_are_fallbacks(tmp_path):
    settings = load_settings(CONFIG, environ={"OPENAI_API_KEY": "sk-fallback", "OPENAI_BASE_URL": "http://x/v1"})
    assert settings.llm.api_key.get_secret_value() == "sk-fallback"
    assert settings.llm.base_url == "http://x/v1"
    preferred = load_settings(
        CONFIG,
        environ={
            "OPENAI_API_KEY": "a",
            "DOCLENS_LLM_API_KEY": "b",
            "OPENAI_BASE_URL": "http://x/v1",
            "DOCLENS_LLM_BASE_URL": "http://y/v1",
        },
    )
    assert preferred.llm.api_key.get_secret_value() == "b"
    assert preferred.llm.base_url == "http://y/v1"


@pytest.mark.parametrize("url", ["not a url", "ftp://example.com/v1", "http://", "localhost:8000/v1"])
def test_endpoint_urls_are_checked(url):
    with pytest.raises(SettingsError, match=r"^config: llm\.base_url: must be an http:// or https:// URL"):
        load_settings(CONFIG, environ={"DOCLENS_LLM_BASE_URL": url})
    with pytest.raises(SettingsError, match=r"embedding\.base_url"):
        load_settings(CONFIG, environ={"DOCLENS_EMBEDDING_BASE_URL": url})


def test_changes_are_validated_like_the_config_file():
    settings = load_settings(CONFIG, environ={"DOCLENS_LLM_API_KEY": "sk-kept"})
    changed = with_changes(settings, {"llm": {"model": "qwen", "base_url": "https://example.com/v1"}})
    assert changed.llm.model == "qwen" and changed.llm.api_key.get_secret_value() == "sk-kept"
    assert settings.llm.model == "" and changed.retrieval == settings.retrieval
    with pytest.raises(SettingsError) as typed:
        with_changes(settings, {"llm": {"timeout": "soon"}})
    with pytest.raises(SettingsError) as from_env:
        load_settings(CONFIG, environ={"DOCLENS_LLM_TIMEOUT": "soon"})
    assert str(typed.value) == str(from_env.value)


def test_doclens_config_names_the_file_when_no_path_is_given(tmp_path):
    """What `--config` sets for the processes a command starts (a bench's `main.py serve`)."""
    team = tmp_path / "team.yaml"
    team.write_text("retrieval:\n  top_k: 7\n", encoding="utf-8")
    assert load_settings(environ={"DOCLENS_CONFIG": str(team)}).retrieval.top_k == 7
    assert load_settings(CONFIG, environ={"DOCLENS_CONFIG": str(team)}).retrieval.top_k != 7, "a path given wins"
