"""The audit log: every destructive action (a deletion, a restore, a purge, emptying the trash, a rename)
appended as one JSON line to ``<data_dir>/audit.jsonl``: who, what, when, and the target.

"Who" is the login name when the web app has logins, ``local`` without them, ``cli`` for the command line
and ``retention`` for the purge of what outlived the trash's retention. The file is only appended to; past
``MAX_BYTES`` it is set aside under a dated name (never deleted) and a new one begins.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import unicodedata
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

LOCAL = "local"  # the web app without logins: one user who may do everything
CLI = "cli"
RETENTION = "retention"
RESUME = "resume"  # the start-up finishing an upload a kill or a restart cut short
MACHINE_ACTORS = (LOCAL, CLI, RETENTION, RESUME)  # names no web login may take: roles trust some of them
MAX_BYTES = 10 * 1024 * 1024  # one file; the next line goes to a fresh one
MAX_WHO_CHARS = 100


def clean_who(who: str) -> str:
    """A login name as recorded: no control characters, at most MAX_WHO_CHARS, never empty."""
    kept = "".join(ch for ch in (who or "") if unicodedata.category(ch) not in ("Cc", "Cf")).strip()
    return kept[:MAX_WHO_CHARS] or LOCAL


class AuditLog:
    def __init__(self, data_dir: Path):
        self.path = data_dir / "audit.jsonl"
        self._lock = threading.Lock()

    def record(self, who: str, what: str, **target: Any) -> None:
        """One line, written and flushed to disk before the caller goes on."""
        line = {
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "who": clean_who(who),
            "what": what,
            "target": target,
        }
        data = (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            self._set_aside_when_full(len(data))
            with open(self.path, "ab") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
        log.info("audit: %s %s %s", line["who"], what, target)

    def lines(self) -> list[dict[str, Any]]:
        """The current file's lines (the tests and a reader of the log)."""
        if not self.path.exists():
            return []
        return [json.loads(row) for row in self.path.read_text(encoding="utf-8").splitlines() if row.strip()]

    def _set_aside_when_full(self, adding: int) -> None:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size + adding > MAX_BYTES:
            target = self.path.with_name(f"audit-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}.jsonl")
            self.path.rename(target)
            log.info("audit log over %d bytes: continued in a new file, the old one is %s", MAX_BYTES, target)
