"""``main.py sync --kb NAME FOLDER [--dry-run] [--watch]``: a line per action, then a summary line."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

from backend.errors import DocLensError
from backend.settings import Settings
from ui.cli.output import CLI_USER, open_service

DONE = {"add": "added", "replace": "replaced", "rename": "renamed", "remove": "removed"}
PLANNED = {"add": "would add", "replace": "would replace", "rename": "would rename", "remove": "would remove"}
NOTED = ("duplicate", "unreadable", "skipped")  # files nothing is done with, said each time


def add_sync_command(sub, common) -> None:
    p = sub.add_parser(
        "sync",
        parents=[common],
        help="make a knowledge base hold exactly a folder's PDFs (add, replace, rename, remove)",
    )
    p.add_argument("--kb", required=True, help="knowledge base name")
    p.add_argument("folder", metavar="FOLDER")
    p.add_argument("--dry-run", action="store_true", help="only print what would be done")
    p.add_argument(
        "--watch",
        action="store_true",
        help="keep syncing until Ctrl-C or SIGTERM (every sync.poll_seconds, default 2 s)",
    )
    p.set_defaults(handler=cmd_sync)


def cmd_sync(args, settings: Settings) -> int:
    from ui.cli.progress import TerminalProgress

    if args.watch and args.dry_run:
        raise DocLensError("--watch and --dry-run do not go together: --dry-run looks once")
    folder = Path(args.folder)
    with open_service(settings) as service, TerminalProgress(lazy=True) as progress:

        def tell(action) -> None:
            progress.write(action_line(action))

        if args.watch:
            return _watch(service, args.kb, folder, progress, tell)
        plan = service.sync(args.kb, folder, dry_run=args.dry_run, progress=progress, on_action=tell, who=CLI_USER)
        for line in _planned_lines(plan, args.dry_run):
            progress.write(line)
        progress.write(summary_line(plan, args.kb, folder, args.dry_run))
    return 1 if _failures(plan) else 0


def _watch(service, kb: str, folder: Path, progress, tell) -> int:
    stop = threading.Event()
    looks = 0

    def on_plan(plan) -> None:
        nonlocal looks
        looks += 1
        if looks == 1 or not plan.in_sync:
            for line in _planned_lines(plan, False):
                progress.write(line)
            progress.write(summary_line(plan, kb, folder, False))

    def on_error(message: str) -> None:
        progress.write(f"error: {message}")

    progress.write(f"watching {folder} (Ctrl-C stops)")
    # SIGTERM (a service manager, `kill`): the look in progress finishes first
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        service.watch_folder(
            kb, folder, stop, on_plan, progress=progress, on_action=tell, on_error=on_error, who=CLI_USER
        )
    except KeyboardInterrupt:  # the document in flight was rolled back; the next sync finishes the job
        stop.set()
    finally:
        signal.signal(signal.SIGTERM, previous)
    progress.write("stopped watching")
    return 0


def _planned_lines(plan, dry_run: bool) -> list[str]:
    """What the apply did not print itself: every action of a dry run, and the files left as they are."""
    return [action_line(a) for a in plan.actions if (dry_run and a.kind in PLANNED) or a.kind in NOTED]


def action_line(action) -> str:
    if action.status == "failed":
        return f"{'failed':9} {action.name}: {action.detail.removeprefix(action.name + ': ')}"  # named once
    if action.kind in NOTED:
        return f"{'skipped':9} {action.source.relative}: {action.kind}: {action.detail}"
    verb = DONE[action.kind] if action.status == "done" else PLANNED[action.kind]
    was = f"{action.old_name} -> " if action.kind == "rename" else ""
    # the folder's path when it is not the document's name (a subfolder, a numbered name)
    where = f" ({action.source.relative})" if action.source and action.source.relative != action.name else ""
    return f"{verb:9} {was}{action.name}{where}" + (f": {action.detail}" if action.detail else "")


def summary_line(plan, kb: str, folder: Path, dry_run: bool) -> str:
    unchanged = len(plan.of("unchanged"))
    if plan.in_sync:
        return f"nothing to do: '{kb.strip()}' is in sync with {folder} ({unchanged} documents)"
    if dry_run:
        counts = {f"to {kind}": len(plan.of(kind)) for kind in DONE}
    else:
        counts = {DONE[kind]: sum(a.status == "done" for a in plan.of(kind)) for kind in DONE}
    failed = len(_failures(plan))
    parts = [f"{n} {what}" for what, n in counts.items() if n]
    parts.append(f"{unchanged} unchanged")
    if failed:
        parts.append(f"{failed} failed")
    head = "dry run (nothing changed)" if dry_run else f"synced '{kb.strip()}' with {folder}"
    return f"{head}: " + ", ".join(parts)


def _failures(plan) -> list:
    return [a for a in plan.actions if a.status == "failed"]
