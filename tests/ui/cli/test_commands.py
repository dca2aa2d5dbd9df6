"""``main.py ask`` as a user runs it: a real process, a real store and the sample PDF."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from backend.answering.extractive import NO_MODEL_NOTICE
from tests.conftest import MODEL_CACHE, REPO_ROOT, SAMPLES
from tests.support.text_pdf import write_text_pdf

PHYSICS = SAMPLES / "物理公式示例文档.pdf"


def run(args: list[str], data_dir: Path, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("DOCLENS_", "OPENAI_"))}
    environ.update({"DOCLENS_DATA_DIR": str(data_dir), "DOCLENS_EMBEDDING_CACHE_DIR": str(MODEL_CACHE), **env})
    return subprocess.run(
        [sys.executable, str(REPO_ROOT / "main.py"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=environ,
        cwd=REPO_ROOT,
    )


@pytest.mark.slow
def test_ask_without_a_model_prints_the_quoted_passages_and_the_notice(tmp_path: Path) -> None:
    assert run(["kb", "create", "physics"], tmp_path).returncode == 0
    ingested = run(["ingest", "--kb", "physics", str(PHYSICS)], tmp_path)
    assert ingested.returncode == 0, ingested.stderr
    asked = run(["ask", "--kb", "physics", "What is the energy of the harmonic oscillator?"], tmp_path)
    assert asked.returncode == 0, asked.stderr
    lines = asked.stdout.splitlines()
    assert lines[0].strip(), "the answer line is not blank"
    assert NO_MODEL_NOTICE.rstrip(".") in asked.stdout
    assert PHYSICS.name in asked.stdout.split("confidence")[0], "the quoted passages name their file"
    assert len(asked.stdout.split("confidence")[0]) > 200, asked.stdout


@pytest.mark.slow
def test_a_first_start_shows_a_bar_of_the_model_build(tmp_path: Path) -> None:
    """Issue 12 item 9: with an empty model cache the first command that needs the model builds it for
    minutes; the CLI shows the build's steps on a bar (float32: the bundled build only, ~2 minutes)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("DOCLENS_", "OPENAI_"))}
    environ.update(
        {
            "DOCLENS_DATA_DIR": str(tmp_path / "data"),
            "DOCLENS_EMBEDDING_CACHE_DIR": str(tmp_path / "cache"),
            "DOCLENS_EMBEDDING_DTYPE": "float32",
        }
    )

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, str(REPO_ROOT / "main.py"), *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=900,
            env=environ,
            cwd=REPO_ROOT,
        )

    created = cli("kb", "create", "first")
    assert created.returncode == 0 and "preparing the embedding model" not in created.stderr, created.stderr
    pdf = write_text_pdf(tmp_path / "note.pdf", [["A short note about harbour tides and the lighthouse keeper."]])
    ingested = cli("ingest", "--kb", "first", str(pdf))
    assert ingested.returncode == 0, ingested.stderr
    for step in ("bundled read", "bundled write", "bundled package"):
        assert f"preparing the embedding model: {step}" in ingested.stderr, ingested.stderr[-2000:]
    assert "%" in ingested.stderr


def test_config_reaches_the_processes_a_command_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """bench-load, bench-page and bench-start serve the app in a process of its own: `--config` reaches it
    through DOCLENS_CONFIG, as the environment's overrides do."""
    from backend.settings import CONFIG_ENV
    from ui.cli.commands import main

    team = tmp_path / "team.yaml"
    team.write_text(f"data_dir: {tmp_path / 'data'}\n", encoding="utf-8")
    monkeypatch.setenv(CONFIG_ENV, "")  # restored (unset) after the test
    monkeypatch.delenv("DOCLENS_DATA_DIR", raising=False)
    assert main(["--config", str(team), "kb", "list"]) == 0
    assert os.environ[CONFIG_ENV] == str(team.resolve())
