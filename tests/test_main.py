"""The command line as a user runs it: real processes, real Milvus Lite store, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import MODEL_CACHE, REPO_ROOT

COMMANDS = [
    [],
    ["serve"],
    ["kb"],
    ["kb", "list"],
    ["kb", "create"],
    ["kb", "rename"],
    ["kb", "delete"],
    ["ingest"],
    ["docs"],
    ["rm"],
    ["figures"],
    ["bench-ingest"],
    ["search"],
    ["ask"],
    ["summary"],
    ["eval"],
    ["calibrate"],
    ["selftest"],
]


def run(args: list[str], data_dir: Path, timeout: float = 180, **env: str) -> subprocess.CompletedProcess:
    environ = {**os.environ, "DOCLENS_DATA_DIR": str(data_dir), "DOCLENS_EMBEDDING_CACHE_DIR": str(MODEL_CACHE), **env}
    return subprocess.run(
        [sys.executable, str(REPO_ROOT / "main.py"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=environ,
        cwd=REPO_ROOT,
    )


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "main")
def test_every_command_has_help(command, tmp_path):
    result = run([*command, "--help"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "usage:" in result.stdout and "--config" in result.stdout


def test_kb_round_trip(tmp_path):
    assert run(["kb", "create", "物理论文"], tmp_path).returncode == 0
    listed = json.loads(run(["kb", "list", "--json"], tmp_path).stdout)
    assert listed == [
        {
            "name": "物理论文",
            "collection": "kb_e789a9e79086e8aebae69687",
            "documents": 0,
            "chunks": 0,
            "embedding_model": "bundled:multilingual-e5-small",
            "dim": 384,
        }
    ]
    assert run(["kb", "rename", "物理论文", "Physics"], tmp_path).returncode == 0
    assert [kb["name"] for kb in json.loads(run(["kb", "list", "--json"], tmp_path).stdout)] == ["Physics"]
    refused = run(["kb", "delete", "Physics"], tmp_path)
    assert refused.returncode == 1 and "--yes" in refused.stderr
    assert run(["kb", "delete", "Physics", "--yes"], tmp_path).returncode == 0
    assert json.loads(run(["kb", "list", "--json"], tmp_path).stdout) == []
    assert (tmp_path / "milvus.db").exists()


def test_failures_are_one_line_without_traceback(tmp_path):
    missing = run(["kb", "delete", "nope", "--yes"], tmp_path)
    assert missing.returncode == 1
    assert missing.stderr.strip() == "error: knowledge base 'nope' does not exist"
    bad_setting = run(["kb", "list"], tmp_path, DOCLENS_RETRIEVAL_TOP_K="lots")
    assert bad_setting.returncode == 1
    assert bad_setting.stderr.count("\n") == 1 and "retrieval.top_k" in bad_setting.stderr
    debug = run(["--debug", "kb", "delete", "nope", "--yes"], tmp_path)
    assert debug.returncode == 1 and "Traceback" in debug.stderr


def test_second_process_gets_a_clear_message(tmp_path):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; sys.path.insert(0, sys.argv[1]);"
            "from backend.store.milvus import MilvusStore; s = MilvusStore(sys.argv[2]); print('ready', flush=True);"
            "time.sleep(120)",
            str(REPO_ROOT),
            str(tmp_path / "milvus.db"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        result = run(["kb", "list"], tmp_path)
        assert result.returncode == 1
        line = result.stderr.strip()
        assert "\n" not in line and "in use by another DocLens process" in line and "lite_server --store" in line
    finally:
        holder.kill()
        holder.wait()


def test_server_mode_by_uri(milvus_server, tmp_path):  # noqa: F811
    env = {"DOCLENS_MILVUS_URI": milvus_server}
    assert run(["kb", "create", "served"], tmp_path, **env).returncode == 0
    assert [kb["name"] for kb in json.loads(run(["kb", "list", "--json"], tmp_path, **env).stdout)] == ["served"]
    assert run(["kb", "delete", "served", "--yes"], tmp_path, **env).returncode == 0
    assert not (tmp_path / "milvus.db").exists()
