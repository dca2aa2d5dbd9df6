"""bench-load: many web sessions at once against `python main.py serve` on a bench-search library.

Each simulated user is a gradio_client session of its own (real HTTP, as a browser's page) asking its questions
one after the other through the streamed ask endpoint; a recording model server (backend/quality/load_model.py)
streams the answers. One upload runs beside them, into a knowledge base of its own. Per question: the time to
the sources (found before the model writes), to the first answer word and to the whole answer. Afterwards
the library is checked: every uploaded document indexed once, the searched knowledge base unchanged; the
upload's knowledge base is removed again, so the library stays as bench-search built it.
"""

from __future__ import annotations

import json
import logging
import statistics
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from backend.errors import DocLensError
from backend.processes import free_port, stop
from backend.quality.bench_search import KB_NAME
from backend.quality.bench_start import library_folder, start_serve, wait_for_page
from backend.quality.load_model import MODEL, LoadModelServer
from backend.quality.metrics import percentile
from backend.settings import Settings

log = logging.getLogger(__name__)

UPLOAD_KB = "bench load uploads"
POLL_S = 0.01  # how often a session looks for the next streamed output (its timings' resolution)
FALLBACK_QUESTIONS = (  # when the library's base material keeps no questions (a test's tiny library)
    "What happened to the river after the dam was built?",
    "Who founded the university and when?",
    "大坝建成后河流发生了什么变化？",
    "How many people lived in the city at the last census?",
)


@dataclass
class Timings:
    """What one session saw: one row per question, and the errors it met."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def run(
    settings: Settings,
    chunks: int,
    users: int,
    questions: int,
    upload: Sequence[Path],
    concurrency: Optional[int] = None,
) -> dict[str, Any]:
    """Serve the bench-search library of ``chunks`` chunks and load it: ``users`` sessions of ``questions``
    questions each, ``upload`` (PDFs) uploaded beside them; ``concurrency``: the app's ``ui.concurrency``."""
    missing = [str(p) for p in upload if not Path(p).is_file()]
    if missing:
        raise DocLensError(f"bench-load: no PDF to upload at {', '.join(missing)}")
    folder = library_folder(settings, chunks)
    remove_upload_kb(settings, folder)  # a run that ended mid-way may have left it
    before = kb_counts(settings, folder)
    model = LoadModelServer().start()
    try:
        report = _load(folder, settings.model_cache_dir, model, users, questions, upload, concurrency)
    finally:
        model.stop()
    report |= {"chunks": chunks, "users": users, "questions_per_user": questions, "llm_qps": settings.llm.qps}
    report["model_requests"] = len(model.questions)
    report["library_unchanged"] = kb_counts(settings, folder, leave_out=UPLOAD_KB) == before
    remove_upload_kb(settings, folder)
    return report


def _load(
    folder: Path,
    model_cache: Path,
    model: LoadModelServer,
    users: int,
    questions: int,
    upload: Sequence[Path],
    concurrency: Optional[int],
) -> dict[str, Any]:
    port = free_port()
    app = _start_app(folder, model_cache, model, port, concurrency)
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_for_page(url, app, app_page=True)
        asked = pick_questions(folder, users * questions)
        _warm_up(url, asked[0])
        uploading = UploadBeside(url, upload)
        sessions = [Timings() for _ in range(users)]
        threads = [
            threading.Thread(target=session, args=(url, asked[k::users][:questions], t), name=f"bench-load-{k}")
            for k, t in enumerate(sessions)
        ]
        started = time.perf_counter()
        uploading.start()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - started
        uploading.join()
        report = summarise(sessions, uploading, wall)
        report["uploaded"] = uploaded_once(url, upload, uploading)
        report["server_peak_rss_mb"] = peak_rss_mb(app.pid)
        report["concurrency"] = concurrency or "config"
        return report
    finally:
        stop(app)


def _start_app(
    folder: Path, model_cache: Path, model: LoadModelServer, port: int, concurrency: Optional[int]
) -> subprocess.Popen:
    env = {"DOCLENS_LLM_BASE_URL": model.base_url, "DOCLENS_LLM_API_KEY": "bench-load", "DOCLENS_LLM_MODEL": MODEL}
    if concurrency:
        env["DOCLENS_UI_CONCURRENCY"] = str(concurrency)
    return start_serve(folder, model_cache, port, env)


def _warm_up(url: str, question: str) -> None:
    """The first question loads the model and opens the knowledge base: not what a loaded server costs."""
    client = web_client(url)
    client.predict(KB_NAME, question, api_name="/ask")
    client.predict(UPLOAD_KB, api_name="/create_kb")


def pick_questions(folder: Path, count: int) -> list[str]:
    """Real questions about the library's material (kept by bench-search with its base), repeated as needed."""
    found: list[str] = []
    for meta in sorted(folder.parent.parent.glob("base-*.json")):
        found += json.loads(meta.read_text(encoding="utf-8")).get("questions", [])
    pool = found or list(FALLBACK_QUESTIONS)
    return [pool[k % len(pool)] for k in range(count)]


def web_client(url: str) -> Any:
    """A gradio_client session. On plain http no certificate is ever checked, yet httpx would load the CA
    bundle for each request the client makes (80 ms of CPU each): a third of both cores went to that,
    taken from the app being measured."""
    from gradio_client import Client

    return Client(url, verbose=False, ssl_verify=not url.startswith("http://"))


def session(url: str, questions: Sequence[str], timings: Timings) -> None:
    """One web session asking its questions one after the other, as a user waiting for each answer."""
    try:
        client = web_client(url)
    except Exception as exc:
        timings.errors.append(f"connect: {exc}")
        return
    for question in questions:
        try:
            timings.rows.append(ask_timed(client, question))
        except Exception as exc:
            timings.errors.append(f"{question[:40]}: {exc.__class__.__name__}: {exc}")


def ask_timed(client: Any, question: str) -> dict[str, Any]:
    """Time one streamed question: to the sources, to the first answer word, to the whole answer."""
    started = time.perf_counter()
    at: dict[str, float] = {}
    job = client.submit(KB_NAME, question, "", api_name="/ask_stream")
    seen, abstained = 0, False
    while True:
        done = job.done()
        outputs = job.outputs()
        for output in outputs[seen:]:
            key = next((k for k in ("sources", "delta", "answer") if k in output), "other")
            at.setdefault(key, time.perf_counter() - started)
            abstained = bool(output.get("answer", {}).get("abstained")) or abstained
        seen = len(outputs)
        if done:
            break
        time.sleep(POLL_S)
    job.result()  # raises what the server raised
    if "sources" not in at or "answer" not in at:
        raise DocLensError(f"the stream ended without {'sources' if 'sources' not in at else 'an answer'}")
    return {
        "started": started,
        "sources_s": at["sources"],
        "first_token_s": at.get("delta", at["answer"]),
        "answer_s": at["answer"],
        "abstained": abstained,  # said the documents do not hold it, without asking the model
    }


class UploadBeside(threading.Thread):
    """The upload running beside the questions, through the API as a client would send it."""

    def __init__(self, url: str, files: Sequence[Path]) -> None:
        super().__init__(name="bench-load-upload", daemon=True)
        self.url, self.files = url, list(files)
        self.started_at = self.ended_at = 0.0
        self.results: list[dict[str, Any]] = []
        self.error = ""

    def run(self) -> None:
        from gradio_client import handle_file

        self.started_at = time.perf_counter()
        try:
            client = web_client(self.url)
            self.results = client.predict(UPLOAD_KB, [handle_file(str(p)) for p in self.files], api_name="/upload")
        except Exception as exc:
            self.error = f"upload: {exc.__class__.__name__}: {exc}"
        self.ended_at = time.perf_counter()

    def overlaps(self, row: dict[str, Any]) -> bool:
        return self.started_at <= row["started"] < self.ended_at


def summarise(sessions: Sequence[Timings], uploading: UploadBeside, wall: float) -> dict[str, Any]:
    rows = [row for s in sessions for row in s.rows]
    errors = [e for s in sessions for e in s.errors] + ([uploading.error] if uploading.error else [])
    beside = [r for r in rows if uploading.overlaps(r)]
    after = [r for r in rows if not uploading.overlaps(r)]
    return {
        "answered": len(rows),
        "abstained": sum(r["abstained"] for r in rows),
        "errors": len(errors),
        "error_examples": sorted(set(errors))[:5],
        "wall_s": round(wall, 1),
        "questions_per_s": round(len(rows) / wall, 2) if wall else 0.0,
        "sources": percentiles([r["sources_s"] for r in rows]),
        "first_token": percentiles([r["first_token_s"] for r in rows]),
        "answer": percentiles([r["answer_s"] for r in rows]),
        "sources_beside_upload": percentiles([r["sources_s"] for r in beside]),
        "sources_without_upload": percentiles([r["sources_s"] for r in after]),
        "upload_s": round(uploading.ended_at - uploading.started_at, 1),
    }


def percentiles(values: Sequence[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0, "p50_s": None, "p95_s": None}
    ordered = sorted(values)
    return {
        "n": len(ordered),
        "p50_s": round(statistics.median(ordered), 2),
        "p95_s": round(percentile(ordered, 95), 2),
    }


def uploaded_once(url: str, files: Sequence[Path], uploading: UploadBeside) -> dict[str, Any]:
    """Every uploaded file indexed, each exactly once, in the upload's knowledge base."""
    documents = web_client(url).predict(UPLOAD_KB, api_name="/documents")
    names = [d["file"] for d in documents if d["status"] == "complete"]
    statuses = [r.get("status") for r in uploading.results]
    expected = sorted({p.name for p in files})
    return {
        "statuses": statuses,
        "indexed_once": sorted(names) == expected,
        "documents": len(documents),
    }


def kb_counts(settings: Settings, folder: Path, leave_out: str = "") -> dict[str, tuple[int, int]]:
    """Documents and chunks of every knowledge base of the library (``leave_out``: not that one)."""
    from backend.service import DocLens

    with DocLens(settings.model_copy(update={"data_dir": folder})) as service:
        return {kb.name: (kb.documents, kb.chunks) for kb in service.list_kbs() if kb.name != leave_out}


def remove_upload_kb(settings: Settings, folder: Path) -> None:
    from backend.service import DocLens

    with DocLens(settings.model_copy(update={"data_dir": folder})) as service:
        if any(kb.name == UPLOAD_KB for kb in service.list_kbs()):
            service.delete_kb(UPLOAD_KB, permanently=True)


def peak_rss_mb(pid: int) -> float:
    """The served app's peak resident memory (Linux /proc), before it stops."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    line = next((line for line in status.splitlines() if line.startswith("VmHWM:")), "VmHWM: 0 kB")
    return round(int(line.split()[1]) / 1024, 0)


def table(report: dict[str, Any]) -> str:
    lines = ["| measure | n | p50 | p95 |", "| --- | --- | --- | --- |"]
    for key, name in (
        ("sources", "to the sources"),
        ("first_token", "to the first answer word"),
        ("answer", "to the whole answer"),
        ("sources_beside_upload", "to the sources, beside the upload"),
        ("sources_without_upload", "to the sources, no upload running"),
    ):
        p = report[key]
        lines.append(f"| {name} | {p['n']} | {p['p50_s']} s | {p['p95_s']} s |")
    uploaded = report["uploaded"]
    lines += [
        "",
        f"{report['users']} sessions x {report['questions_per_user']} questions on {report['chunks']:,} chunks "
        f"(concurrency {report['concurrency']}, llm.qps {report['llm_qps']:g}): "
        f"{report['answered']} answered ({report['abstained']} abstained), "
        f"{report['errors']} errors, "
        f"{report['questions_per_s']} questions/s; upload {report['upload_s']} s {uploaded['statuses']}, "
        f"indexed once: {uploaded['indexed_once']}; library unchanged: {report['library_unchanged']}; "
        f"server peak RSS {report['server_peak_rss_mb']:.0f} MB",
    ]
    return "\n".join(lines)
