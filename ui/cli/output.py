"""What the command-line commands share: the service they open and how they print results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from backend.settings import Settings

CLI_USER = "cli"  # who the audit log names for the command line


def open_service(settings: Settings):
    from backend.service import DocLens

    return DocLens(settings)


def emit_json(data: Any) -> None:
    print(json.dumps(data, ensure_ascii=False, indent=2))


def show_rows(rows: list[dict[str, Any]], as_json: bool, columns: list[str]) -> None:
    """Listing commands print JSON for scripts or an aligned table for people."""
    if as_json:
        emit_json(rows)
    else:
        print_table(rows, columns)


def print_table(rows: list[dict[str, Any]], columns: list[str]) -> None:
    if not rows:
        print("(none)")
        return
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns))
    for row in rows:
        print("  ".join(str(row.get(c, "")).ljust(widths[c]) for c in columns))


def write_json(path: Optional[str], data: Any) -> None:
    if path:
        Path(path).write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
        print(f"wrote {path}")
