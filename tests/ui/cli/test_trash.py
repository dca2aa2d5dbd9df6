"""``main.py trash list | restore | empty`` as a user runs it: real processes, a real store, a real PDF;
what ``kb delete`` and ``rm`` delete is listed, restored and searchable again, the audit log says "cli"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import SAMPLES
from tests.ui.cli.test_commands import run

BUSINESS = SAMPLES / "商业分析示例文档.pdf"


def entries(data: Path) -> list[dict]:
    listed = run(["trash", "list", "--json"], data)
    assert listed.returncode == 0, listed.stderr
    return json.loads(listed.stdout)


@pytest.mark.slow
def test_deleted_documents_and_kbs_are_listed_restored_and_emptied(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run(["kb", "create", "papers"], data).returncode == 0
    assert run(["ingest", "--kb", "papers", str(BUSINESS)], data).returncode == 0
    removed = run(["rm", "--kb", "papers", BUSINESS.name], data)
    assert removed.returncode == 0, removed.stderr
    [doc] = entries(data)
    assert f"`main.py trash restore {doc['id']}` brings it back" in removed.stdout
    assert (doc["kind"], doc["kb"], doc["file"], doc["deleted_by"]) == ("document", "papers", BUSINESS.name, "cli")
    table = run(["trash", "list"], data).stdout
    assert doc["id"] in table and "purged after" in table
    restored = run(["trash", "restore", doc["id"]], data)
    assert restored.returncode == 0 and f"restored {BUSINESS.name} into 'papers'" in restored.stdout
    assert BUSINESS.name in run(["search", "--kb", "papers", "商业分析"], data).stdout

    assert run(["kb", "delete", "papers", "--yes"], data).returncode == 0
    assert run(["kb", "create", "papers"], data).returncode == 0  # the name is taken again
    [kb] = entries(data)
    refused = run(["trash", "restore", kb["id"]], data)
    assert refused.returncode == 1 and "'papers' already exists; choose another name" in refused.stderr
    assert run(["trash", "restore", kb["id"], "--name", "papers 2"], data).returncode == 0
    assert BUSINESS.name in run(["docs", "--kb", "papers 2"], data).stdout

    assert run(["rm", "--kb", "papers 2", BUSINESS.name], data).returncode == 0
    assert run(["trash", "empty"], data).returncode == 1  # without --yes: refused
    emptied = run(["trash", "empty", "--yes"], data)
    assert emptied.returncode == 0 and "removed 1 item(s)" in emptied.stdout and entries(data) == []
    audit = [json.loads(line) for line in (data / "audit.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {line["who"] for line in audit} == {"cli"}
    assert [line["what"] for line in audit] == [
        "delete_document",
        "restore_document",
        "delete_kb",
        "restore_kb",
        "delete_document",
        "empty_trash",
    ]
