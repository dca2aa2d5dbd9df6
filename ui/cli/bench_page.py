"""``main.py bench-page``: the waits a user feels in the browser (issue 26 item 21)."""

from __future__ import annotations

from pathlib import Path

from backend.settings import Settings
from ui.cli.output import write_json


def add_bench_page_command(sub, common) -> None:
    from backend.quality.bench_page import DEFAULT_UPLOAD

    p = sub.add_parser(
        "bench-page", parents=[common], help="in Chromium: start to page, language switch, reload mid-upload"
    )
    p.add_argument("--docs", type=int, default=1000, help="documents registered in the knowledge base")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--upload", type=Path, default=DEFAULT_UPLOAD, help="the PDF uploaded (then cancelled)")
    p.add_argument("--json", metavar="OUT", help="also write the figures as JSON")
    p.set_defaults(handler=cmd_bench_page)


def cmd_bench_page(args, settings: Settings) -> int:
    from backend.quality.bench_page import run, table

    report = run(settings, args.docs, args.runs, args.upload)
    print(table(report))
    write_json(args.json, report)
    return 0
