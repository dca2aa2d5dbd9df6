"""Peak memory of ingesting each hostile PDF (backend.quality.hostile_pdfs), one child process per file.

    nice .venv/bin/python -m backend.quality.bench_hostile [--abort-gb 4] [--only bomb,...] [--baseline PDF ...]

``--baseline``: ordinary PDFs (a paper, a scan) measured the same way, for comparison.
Each child creates a knowledge base in a fresh data folder, ingests one file with the configured
limits (config.yaml) and prints its result and its peak RSS. A watchdog ends a child that passes
``--abort-gb`` (so a run against old code cannot take the machine down); that file is reported as over.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from backend.quality import hostile_pdfs
from backend.service import DocLens
from backend.settings import load_settings

REPO_ROOT = Path(__file__).resolve().parents[2]

log = logging.getLogger(__name__)

FILES = {  # the sizes that once cost gigabytes
    "huge_page": lambda p: hostile_pdfs.huge_page(p, 14400),
    "scanned_poster": lambda p: hostile_pdfs.scanned_poster(p, 1189),
    "long_line_10mb": lambda p: hostile_pdfs.long_line(p, 10_000_000),
    "long_line_2mb": lambda p: hostile_pdfs.long_line(p, 2_000_000),
    "bomb_1gb": lambda p: hostile_pdfs.compression_bomb(p, 1024),
    "page_cycle": hostile_pdfs.page_cycle,
    "trailing_junk": hostile_pdfs.trailing_junk,
    "long_text_object": lambda p: hostile_pdfs.long_text_object(p)[0],
}


def _rss_gb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024 / 1024
    return 0.0


def _watchdog(limit_gb: float) -> None:
    while True:
        if _rss_gb() > limit_gb:
            print(json.dumps({"aborted": f"RSS passed {limit_gb} GB"}), flush=True)
            os._exit(3)
        time.sleep(0.05)


def child(kind: str, folder: Path, abort_gb: float) -> None:
    threading.Thread(target=_watchdog, args=(abort_gb,), daemon=True).start()
    pdf = FILES[kind](folder / f"{kind}.pdf") if kind in FILES else Path(kind)  # a baseline: its own path
    environ = {**os.environ, "DOCLENS_DATA_DIR": str(folder / "data")}  # DOCLENS_INGEST_*: other limits
    with DocLens(load_settings(environ=environ)) as service:
        service.create_kb("bench")
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024
        started = time.perf_counter()
        result = service.ingest("bench", [pdf])[0]
        seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024
    print(
        json.dumps(
            {
                "status": result.status,
                "chunks": result.chunks,
                "error": result.error,
                "seconds": round(seconds, 1),
                "file_kb": pdf.stat().st_size // 1024,
                "peak_rss_gb": round(peak, 2),
                "rss_before_gb": round(before, 2),
            }
        ),
        flush=True,
    )


def _shown(kind: str) -> str:
    return kind if kind in FILES else Path(kind).name


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--abort-gb", type=float, default=4.0)
    parser.add_argument("--only", default="", help="comma-separated kinds: " + ", ".join(FILES))
    parser.add_argument("--baseline", nargs="*", default=[], metavar="PDF", help="ordinary PDFs to compare with")
    parser.add_argument("--child", default="", help=argparse.SUPPRESS)
    parser.add_argument("--folder", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, Path(args.folder), args.abort_gb)
        return 0
    kinds = [str(Path(p).resolve()) for p in args.baseline] + ([k for k in args.only.split(",") if k] or list(FILES))
    print(f"{'file':18} {'KB':>7} {'peak RSS':>9} {'s':>6}  result")
    for kind in kinds:
        with tempfile.TemporaryDirectory(prefix="bench-hostile-") as folder:
            run = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "backend.quality.bench_hostile",
                    "--child",
                    kind,
                    "--folder",
                    folder,
                    "--abort-gb",
                    str(args.abort_gb),
                ],
                cwd=REPO_ROOT,
                capture_output=True,
                text=True,
            )
        lines = [ln for ln in run.stdout.splitlines() if ln.startswith("{")]
        report = json.loads(lines[-1]) if lines else {"aborted": f"exit {run.returncode}: {run.stderr[-300:]}"}
        if "aborted" in report:
            print(
                f"{_shown(kind):18} {'':>7} {'> ' + str(args.abort_gb) + ' GB':>9} {'':>6}  aborted: {report['aborted']}"
            )
            continue
        print(
            f"{_shown(kind):18} {report['file_kb']:>7} {report['peak_rss_gb']:>7.2f}GB {report['seconds']:>6}  "
            f"{report['status']} ({report['chunks']} chunks) {report['error'] or ''}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
