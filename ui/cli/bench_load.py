"""``main.py bench-load``: many web sessions at once against ``serve`` (issue 28)."""

from __future__ import annotations

from pathlib import Path

from backend.settings import Settings
from ui.cli.output import write_json


def add_bench_load_command(sub, common) -> None:
    from backend.quality.bench_page import DEFAULT_UPLOAD

    p = sub.add_parser("bench-load", parents=[common], help="concurrent web sessions (and an upload) against `serve`")
    p.add_argument("--users", type=int, default=16, help="web sessions asking at once")
    p.add_argument("--questions", type=int, default=20, help="questions each session asks, one after the other")
    p.add_argument("--chunks", type=int, default=100_000, help="the bench-search library to serve")
    p.add_argument(
        "--upload", type=Path, nargs="+", default=[DEFAULT_UPLOAD], metavar="PATH", help="PDFs uploaded beside them"
    )
    p.add_argument("--concurrency", type=int, help="the app's ui.concurrency for this run (default: config)")
    p.add_argument("--json", metavar="OUT", help="also write the figures as JSON")
    p.set_defaults(handler=cmd_bench_load)


def cmd_bench_load(args, settings: Settings) -> int:
    from backend.quality.bench_load import run, table

    report = run(settings, args.chunks, args.users, args.questions, args.upload, args.concurrency)
    print(table(report))
    write_json(args.json, report)
    return 0 if report["errors"] == 0 and report["uploaded"]["indexed_once"] and report["library_unchanged"] else 1
