"""``main.py trash list | restore ID [--name NEW] | empty --yes``: what was deleted, kept for
``trash.retention_days``; restored without embedding anything again."""

from __future__ import annotations

import time

from backend.errors import DocLensError
from backend.settings import Settings
from ui.cli.output import CLI_USER, open_service, show_rows


def add_trash_command(sub, common) -> None:
    trash = sub.add_parser("trash", parents=[common], help="deleted knowledge bases and documents: list, restore")
    trash.set_defaults(handler=lambda args, settings: trash.print_help() or 1)
    actions = trash.add_subparsers(title="trash commands", metavar="ACTION")
    p = actions.add_parser("list", parents=[common], help="what is in the trash, and until when")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_trash_list)
    p = actions.add_parser("restore", parents=[common], help="bring a knowledge base or a document back")
    p.add_argument("id", metavar="ID", help="its id in `trash list`")
    p.add_argument("--name", metavar="NEW", help="a knowledge base's new name, when its own is taken now")
    p.set_defaults(handler=cmd_trash_restore)
    p = actions.add_parser("empty", parents=[common], help="remove everything in the trash for good")
    p.add_argument("--yes", action="store_true", help="confirm")
    p.set_defaults(handler=cmd_trash_empty)


def when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds))


def cmd_trash_list(args, settings: Settings) -> int:
    with open_service(settings) as service:
        entries = [e.to_dict() for e in service.trash_entries()]
    if not args.json:
        for row in entries:
            row["deleted"], row["purged after"] = when(row["deleted_at"]), when(row["expires_at"])
    columns = ["id", "kind", "kb", "file", "documents", "chunks", "deleted", "deleted_by", "purged after"]
    show_rows(entries, args.json, columns)
    return 0


def cmd_trash_restore(args, settings: Settings) -> int:
    with open_service(settings) as service:
        entry = service.restore(args.id, new_name=args.name, who=CLI_USER)
    if entry.kind == "kb":
        print(f"restored knowledge base '{entry.kb}' ({entry.documents} documents, {entry.chunks} chunks)")
    else:
        print(f"restored {entry.file} into '{entry.kb}' ({entry.chunks} chunks)")
    return 0


def cmd_trash_empty(args, settings: Settings) -> int:
    if not args.yes:
        raise DocLensError("emptying the trash removes everything in it for good: add --yes to confirm")
    with open_service(settings) as service:
        purged = service.empty_trash(who=CLI_USER)
    print(f"removed {len(purged)} item(s) from the trash for good")
    return 0


def moved_line(entry, what: str) -> str:
    """What a deletion prints: where it went and how to undo it."""
    days = max(0.0, (entry.expires_at - entry.deleted_at) / 86400)
    return f"moved {what} to the trash for {days:g} days: `main.py trash restore {entry.id}` brings it back"
