"""bench-page: the waits a user feels in the browser, on a knowledge base of N registered documents.

Three timings (issue 26 item 21), each in a real Chromium driven by Playwright against `python main.py serve`
started as a user starts it (no model configured):

- **start to page**: from starting the process to the first page shown (the one shown while the app
  starts, ui/starting_page.py), to the app drawn (its tabs shown) and to the app ready (its load events
  done: the pickers and the documents table filled);
- **language switch**: from the click on the other language to the tabs relabelled and every event done;
- **reload mid-upload**: an upload running, the page reloaded; from the reload to its progress shown
  again on the Knowledge base tab (the user clicks the tab, as after any reload).

The library is built once under ``<data_dir>/bench-page/docs-N``: one knowledge base whose documents are
registered without their chunks (the page lists documents; it never reads their vectors).
"""

from __future__ import annotations

import logging
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from backend.errors import DocLensError
from backend.processes import free_port, stop
from backend.quality.bench_start import NO_MODEL, REPO_ROOT, start_serve
from backend.settings import Settings
from backend.types import DocumentInfo

log = logging.getLogger(__name__)

KB_NAME = "bench page"
DEFAULT_UPLOAD = REPO_ROOT.parent / "shared" / "bench" / "dev-en" / "docs" / "en_039.pdf"  # 5 scanned pages
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
PENDING = ".wrap.generating, .pending, .eta-bar"
TIMEOUT_S = 300


def library_folder(settings: Settings, documents: int) -> Path:
    """The data folder of a library whose one knowledge base registers ``documents`` documents (built once)."""
    folder = settings.data_dir / "bench-page" / f"docs-{documents}"
    if (folder / "complete").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    from backend.knowledge_bases.registry import Registry
    from backend.service import DocLens

    service = DocLens(settings.model_copy(update={"data_dir": folder}))
    try:
        collection = service.create_kb(KB_NAME).collection
    finally:
        service.close()
    kb_folder = folder / "kbs" / collection
    Registry(kb_folder).add_documents(registered_documents(documents))
    (folder / "complete").touch()
    return folder


def forget_upload(settings: Settings, folder: Path, name: str) -> None:
    """Remove the bench's upload from the library if an earlier run left it there (indexed, or part of it)."""
    from backend.service import DocLens

    service = DocLens(settings.model_copy(update={"data_dir": folder}))
    try:
        kb = service.open_kb(KB_NAME, check_model=False)
        for document in kb.registry.documents():
            if document.file == name:
                log.info("bench-page: removing %s left by an earlier run", name)
                kb.remove_document(document.doc_id)
    finally:
        service.close()


def paper_name(i: int) -> str:
    return f"paper_{i:05d}.pdf"


def registered_documents(count: int, file_name: Callable[[int], str] = paper_name) -> list[DocumentInfo]:
    """Documents as the registry holds them (pages, chunks, sizes and dates varied), without their chunks."""
    return [
        DocumentInfo(
            doc_id=f"{i:032x}",
            file=file_name(i),
            sha256=f"{i:064x}",
            pages=i % 37 + 1,
            ocr_pages=0,
            chunks=(i * 37) % 997,
            figures=0,
            status="complete",
            created_at=1_760_000_000 + i * 60,
            bytes=100_000 + i,
        )
        for i in range(count)
    ]


def run(settings: Settings, documents: int, runs: int, upload: Path) -> dict[str, Any]:
    if not upload.is_file():
        raise DocLensError(f"bench-page: no PDF to upload at {upload} (pass --upload PATH)")
    if not CHROMIUM.exists():
        raise DocLensError(f"bench-page drives Chromium: {CHROMIUM} is missing (apt install chromium)")
    folder = library_folder(settings, documents)
    results = []
    for k in range(runs):
        forget_upload(settings, folder, upload.name)  # a run that ended mid-way may have indexed it
        results.append(one_run(folder, settings.model_cache_dir, upload))
        log.info("bench-page: run %d of %d: %s", k + 1, runs, results[-1])
    keys = ("first_page_s", "page_drawn_s", "page_ready_s", "switch_s", "reload_to_progress_s")
    return {
        "documents": documents,
        "runs": results,
        "median": {key: round(statistics.median(r[key] for r in results), 2) for key in keys},
    }


def one_run(data_dir: Path, model_cache: Path, upload: Path) -> dict[str, float]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    with browser_page() as page:
        started = time.perf_counter()
        app = start_serve(data_dir, model_cache, port, NO_MODEL)
        try:
            timings = page_start(page, url, app, started)
            wait_for_model(page)  # the next two on a quiet machine: the model loads once, at start
            timings["switch_s"] = language_switch(page)
            timings["reload_to_progress_s"] = reload_mid_upload(page, upload)
            return timings
        finally:
            stop(app)


def browser_page() -> Any:
    """A fresh Chromium profile, as a new user's browser; closed at the end."""
    from contextlib import contextmanager

    @contextmanager
    def opened() -> Iterator[Any]:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright, tempfile.TemporaryDirectory(prefix="doclens-bench-page-") as profile:
            context = playwright.chromium.launch_persistent_context(
                profile,
                executable_path=str(CHROMIUM),
                headless=True,
                args=CHROMIUM_ARGS,
                viewport={"width": 1400, "height": 900},
                locale="en-US",
            )
            context.set_default_timeout(TIMEOUT_S * 1000)
            try:
                yield context.new_page()
            finally:
                context.close()

    return opened()


def page_start(page: Any, url: str, app: subprocess.Popen, started: float) -> dict[str, float]:
    """Open the page as soon as the server answers; the page drawn (its tabs) and ready (no event pending)."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        if app.poll() is not None:
            raise DocLensError(f"bench-page: the app stopped at start (exit code {app.returncode})")
        try:
            page.goto(url, timeout=5_000)
            break
        except Exception:
            if time.monotonic() > deadline:
                raise DocLensError(f"bench-page: no page after {TIMEOUT_S} s") from None
            time.sleep(0.05)
    first = time.perf_counter() - started  # the page shown while the app starts (ui/starting_page.py), or the app
    page.get_by_role("tab", name="Knowledge base").wait_for()  # the starting page loads the app by itself
    drawn = time.perf_counter() - started
    wait_ready(page)
    return {
        "first_page_s": round(first, 2),
        "page_drawn_s": round(drawn, 2),
        "page_ready_s": round(time.perf_counter() - started, 2),
    }


def wait_ready(page: Any) -> None:
    """No Gradio event pending for 300 ms (a load chain's next step starts right after the one before)."""
    while True:
        page.wait_for_function(f"() => !document.querySelector('{PENDING}')")
        page.wait_for_timeout(300)
        if not page.evaluate(f"() => !!document.querySelector('{PENDING}')"):
            return


def wait_for_model(page: Any) -> None:
    """Until the embedding model is loaded (the page's banner about it is gone): an upload waits for it,
    and its loading holds both cores."""
    page.wait_for_function(
        "() => { const b = document.querySelector('#model-banner');"
        " return !b || b.offsetParent === null || !b.innerText.trim(); }",
        polling=500,
    )


def language_switch(page: Any) -> float:
    """Chinese and back: the median of the two, each from the click to every event done."""
    times = []
    for choice, tab in (("中文", "知识库"), ("English", "Knowledge base")):
        started = time.perf_counter()
        page.locator("#language-switch").get_by_text(choice).click()
        page.get_by_role("tab", name=tab).wait_for()
        wait_ready(page)
        times.append(time.perf_counter() - started - 0.3)  # less wait_ready's quiet 300 ms
    return round(statistics.median(times), 2)


def reload_mid_upload(page: Any, upload: Path) -> float:
    """Start an upload, reload once its progress shows; from the reload to the progress shown again.
    The upload is cancelled at the end: the library stays as it was."""
    page.get_by_role("tab", name="Knowledge base").click()
    wait_ready(page)
    page.locator("#upload-files input[type=file]").set_input_files(str(upload))
    page.locator(f'#upload-files td.filename[aria-label="{upload.name}"]').first.wait_for()
    page.locator("#upload-start").click()
    page.locator("#ingest-status .dl-progress").wait_for()
    started = time.perf_counter()
    page.reload()
    page.get_by_role("tab", name="Knowledge base").click()
    log.debug("bench-page: the tabs back after %.2f s", time.perf_counter() - started)
    # the progress, or (an upload too short for the reload) how it ended: said, not waited for in vain
    page.locator("#ingest-status .dl-progress, #ingest-status table").first.wait_for()
    if not page.locator("#ingest-status .dl-progress").count():
        shown = page.locator("#ingest-status").inner_text()[:300]
        raise DocLensError(
            f"bench-page: {upload.name} ended before the reloaded page came back; use a longer file "
            f"(the page showed: {shown!r})"
        )
    felt = time.perf_counter() - started
    page.locator("#upload-cancel").click()
    page.wait_for_function("() => !document.querySelector('#ingest-status .dl-progress')")
    return round(felt, 2)


def table(report: dict[str, Any]) -> str:
    lines = [
        "| run | first page | app drawn | app ready | language switch | reload mid-upload to progress |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    rows = [*enumerate(report["runs"], 1), ("median", report["median"])]
    for name, r in rows:
        lines.append(
            f"| {name} | {r['first_page_s']} s | {r['page_drawn_s']} s | {r['page_ready_s']} s | {r['switch_s']} s | "
            f"{r['reload_to_progress_s']} s |"
        )
    return "\n".join(lines)
