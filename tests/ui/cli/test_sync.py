"""``main.py sync`` as a user runs it (issue 28 item 1): real processes, real PDFs, a real store; killed
with SIGKILL in the middle and run again, it ends as one clean run does."""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.backend.ingestion.support import assert_consistent, one_page
from tests.conftest import MODEL_CACHE, REPO_ROOT, make_settings


def environment(data_dir: Path, **extra: str) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("DOCLENS_", "OPENAI_"))}
    environ.update({"DOCLENS_DATA_DIR": str(data_dir), "DOCLENS_EMBEDDING_CACHE_DIR": str(MODEL_CACHE), **extra})
    return environ


def run(args: list[str], data_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO_ROOT / "main.py"), *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=environment(data_dir),
        cwd=REPO_ROOT,
    )


class Running:
    """``main.py`` in the background, its stdout read line by line as it comes."""

    def __init__(self, args: list[str], data_dir: Path, log: Path, **extra: str):
        self.log = open(log, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, str(REPO_ROOT / "main.py"), *args],
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env=environment(data_dir, **extra),
            cwd=REPO_ROOT,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, start: str, timeout: float = 300.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no line starting {start!r}; saw {self.seen}") from None
            self.seen.append(line)
            if line.startswith(start):
                return line

    def stop(self, sig: int) -> int:
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout=120)
        self.log.close()
        return code


def make_folder(folder: Path, words: dict[str, str]) -> None:
    """``folder`` holding exactly ``relative path -> word`` (one-page PDFs)."""
    shutil.rmtree(folder, ignore_errors=True)
    for relative, word in words.items():
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(one_page(folder.parent / "made", word), target)


def lines_of(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in result.stdout.splitlines() if line.strip()]


@pytest.mark.slow
def test_sync_prints_each_action_and_a_second_run_has_nothing_to_do(tmp_path):
    data, folder = tmp_path / "data", tmp_path / "papers"
    make_folder(folder, {"2023/report.pdf": "basalt", "2024/report.pdf": "granite", "notes.pdf": "gabbro"})
    assert run(["kb", "create", "geo"], data).returncode == 0
    dry = run(["sync", "--kb", "geo", str(folder), "--dry-run"], data)
    assert dry.returncode == 0, dry.stderr
    assert lines_of(dry) == [
        "would add report.pdf (2023/report.pdf)",
        "would add report (2).pdf (2024/report.pdf)",
        "would add notes.pdf",
        "dry run (nothing changed): 3 to add, 0 unchanged",
    ]
    first = run(["sync", "--kb", "geo", str(folder)], data)
    assert first.returncode == 0, first.stderr
    assert [line.split(":")[0] for line in lines_of(first)] == [
        "added     report.pdf (2023/report.pdf)",
        "added     report (2).pdf (2024/report.pdf)",
        "added     notes.pdf",
        f"synced 'geo' with {folder}",
    ]
    assert lines_of(first)[-1].endswith(": 3 added, 0 unchanged")
    again = run(["sync", "--kb", "geo", str(folder)], data)
    assert lines_of(again) == [f"nothing to do: 'geo' is in sync with {folder} (3 documents)"]

    (folder / "notes.pdf").rename(folder / "field notes.pdf")
    (folder / "2023" / "report.pdf").unlink()
    changed = run(["sync", "--kb", "geo", str(folder)], data)
    assert changed.returncode == 0, changed.stderr
    assert lines_of(changed) == [
        "removed   report.pdf: 1 chunks, into the trash",
        "renamed   report (2).pdf -> report.pdf (2024/report.pdf): 1 chunks kept, nothing embedded again",
        "renamed   notes.pdf -> field notes.pdf: 1 chunks kept, nothing embedded again",
        f"synced 'geo' with {folder}: 2 renamed, 1 removed, 0 unchanged",
    ]


@pytest.mark.slow
def test_a_sync_killed_in_the_middle_and_run_again_ends_as_one_clean_run(tmp_path):
    before = {"a.pdf": "basalt", "b.pdf": "granite", "c.pdf": "gabbro", "d.pdf": "quartz"}
    after = {
        "moved/a.pdf": "basalt",  # unchanged
        "granite.pdf": "granite",  # renamed
        "c.pdf": "gabbro, rewritten",  # replaced
        **{f"new/{word}.pdf": word for word in ("diorite", "peridotite", "andesite", "rhyolite", "obsidian")},
    }  # and d.pdf is gone: removed
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    for data in (killed, clean):
        make_folder(tmp_path / "papers", before)
        assert run(["kb", "create", "geo"], data).returncode == 0
        assert run(["sync", "--kb", "geo", str(tmp_path / "papers")], data).returncode == 0
    make_folder(tmp_path / "papers", after)

    one_by_one = {"DOCLENS_INGEST_EMBED_GROUP_CHUNKS": "1"}  # each file stored on its own: a line each
    running = Running(["sync", "--kb", "geo", str(tmp_path / "papers")], killed, tmp_path / "killed.log", **one_by_one)
    running.wait_for("added")
    assert running.stop(signal.SIGKILL) == -signal.SIGKILL
    rerun = run(["sync", "--kb", "geo", str(tmp_path / "papers")], killed)
    assert rerun.returncode == 0, rerun.stderr
    assert any(line.startswith("added") for line in lines_of(rerun)), "the kill came after the last file"
    assert lines_of(run(["sync", "--kb", "geo", str(tmp_path / "papers")], clean))[-1].startswith("synced")
    assert _state(killed) == _state(clean)
    assert lines_of(run(["sync", "--kb", "geo", str(tmp_path / "papers")], killed))[0].startswith("nothing to do")


@pytest.mark.slow
def test_watch_indexes_a_file_added_while_it_runs_until_stopped(tmp_path):
    data, folder = tmp_path / "data", tmp_path / "papers"
    make_folder(folder, {"a.pdf": "basalt"})
    assert run(["kb", "create", "geo"], data).returncode == 0
    watching = Running(
        ["sync", "--kb", "geo", str(folder), "--watch"], data, tmp_path / "watch.log", DOCLENS_SYNC_POLL_SECONDS="0.3"
    )
    watching.wait_for(f"watching {folder}")
    watching.wait_for("added     a.pdf")
    watching.wait_for("synced 'geo'")
    shutil.copy(one_page(tmp_path / "made", "granite"), folder / "b.pdf")
    watching.wait_for("added     b.pdf")
    assert watching.stop(signal.SIGTERM) == 0
    watching.wait_for("stopped watching", timeout=10)
    assert sorted(d.file for d in _documents(data)) == ["a.pdf", "b.pdf"]


def _documents(data: Path):
    from backend.service import DocLens

    with DocLens(make_settings(data)) as service:
        return service.documents("geo")


def _state(data: Path) -> tuple:
    """What the knowledge base holds: documents by name and content, their chunks, the rows stored."""
    from backend.service import DocLens

    with DocLens(make_settings(data)) as service:
        assert_consistent(service, "geo")
        docs = sorted((d.file, d.sha256, d.pages, d.chunks, d.figures, d.status) for d in service.documents("geo"))
        return docs, service.store.count(service.open_kb("geo", check_model=False).collection)
