"""bench-start: from `python main.py serve` to the page and to the first answer, on a bench-search library.

The app is started as a user starts it, in a process of its own with the library as its data folder; the
first question goes through the page's API (gradio_client), as soon as the page is served.
"""

from __future__ import annotations

import logging
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from backend.errors import DocLensError
from backend.processes import free_port, stop
from backend.quality.bench_search import KB_NAME, engine_tag
from backend.settings import Settings

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]
QUESTION = "What happened to the river after the dam was built?"
PAGE_TIMEOUT_S = 300
STARTING_HEADER = "X-DocLens-Starting"  # on the page shown while the app starts (ui/starting_page.py)


def library_folder(settings: Settings, chunks: int) -> Path:
    """Where bench-search keeps its library of this size (built once by `bench-search --chunks N`)."""
    folder = settings.data_dir / "bench-search" / engine_tag(settings) / f"lite-{chunks}"
    if not (folder / "complete").exists():
        raise DocLensError(
            f"no bench-search library of {chunks:,} chunks in {folder}: "
            f"build it first with `python main.py bench-search --chunks {chunks}`"
        )
    return folder


def run(settings: Settings, chunks: int, runs: int) -> dict[str, Any]:
    folder = library_folder(settings, chunks)
    starts = []
    for k in range(runs):
        starts.append(one_start(folder, settings.model_cache_dir))
        log.info("bench-start: run %d of %d: %s", k + 1, runs, starts[-1])
    answers = [s["first_answer_s"] for s in starts]
    return {
        "chunks": chunks,
        "runs": starts,
        "page_median_s": round(statistics.median(s["page_s"] for s in starts), 1),
        "app_page_median_s": round(statistics.median(s["app_page_s"] for s in starts), 1),
        "first_answer_median_s": round(statistics.median(answers), 1),
        "first_answer_max_s": round(max(answers), 1),
    }


def start_serve(data_dir: Path, model_cache: Path, port: int, env: dict[str, str]) -> subprocess.Popen:
    """`python main.py serve` as a user starts it, on the library ``data_dir`` with the model built in
    ``model_cache`` (not a new build in the library); ``env``: settings of this run."""
    environ = {**os.environ, "DOCLENS_DATA_DIR": str(data_dir), "DOCLENS_EMBEDDING_CACHE_DIR": str(model_cache), **env}
    command = [sys.executable, "main.py", "serve", "--port", str(port)]
    return subprocess.Popen(command, cwd=REPO_ROOT, env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


NO_MODEL = {"DOCLENS_LLM_API_KEY": "", "DOCLENS_LLM_BASE_URL": ""}  # the passages only: no model answers


def one_start(data_dir: Path, model_cache: Path) -> dict[str, float]:
    port = free_port()
    started = time.perf_counter()
    app = start_serve(data_dir, model_cache, port, NO_MODEL)
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_for_page(url, app, app_page=False)
        page = time.perf_counter() - started
        wait_for_page(url, app, app_page=True)
        app_page = time.perf_counter() - started
        from gradio_client import Client

        Client(url, verbose=False).predict(KB_NAME, QUESTION, api_name="/ask")
        return {
            "page_s": round(page, 1),
            "app_page_s": round(app_page, 1),
            "first_answer_s": round(time.perf_counter() - started, 1),
        }
    finally:
        stop(app)


def wait_for_page(url: str, app: subprocess.Popen, app_page: bool) -> None:
    """Until a page is served: any (the one shown while the app starts counts), or the app's own."""
    deadline = time.monotonic() + PAGE_TIMEOUT_S
    while time.monotonic() < deadline:
        if app.poll() is not None:
            raise DocLensError(f"bench-start: the app stopped at start (exit code {app.returncode})")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                response.read()
                if not app_page or not response.headers.get(STARTING_HEADER):
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise DocLensError(f"bench-start: no page after {PAGE_TIMEOUT_S} s")


def table(report: dict[str, Any]) -> str:
    lines = ["| run | page served | app served | first answer |", "| --- | --- | --- | --- |"]
    lines += [
        f"| {k} | {s['page_s']} s | {s['app_page_s']} s | {s['first_answer_s']} s |"
        for k, s in enumerate(report["runs"], 1)
    ]
    lines.append(
        f"| median | {report['page_median_s']} s | {report['app_page_median_s']} s | {report['first_answer_median_s']} s "
        f"(max {report['first_answer_max_s']} s) |"
    )
    return "\n".join(lines)
