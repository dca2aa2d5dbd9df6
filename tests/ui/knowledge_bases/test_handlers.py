"""KBHandlers (ui/knowledge_bases/handlers.py) over a real DocLens: status lines, uploads, confirmations, cancelling,
the self-test. Fixtures and helpers: tests/ui/handler_support.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import gradio as gr
import pytest

from backend.service import DocLens
from backend.types import IngestResult, ProgressEvent
from tests.backend.ingestion.support import LAYOUT
from tests.conftest import SAMPLES
from tests.ui.handler_support import (
    KB,
    PHYSICS,
    WARN,
    RecordingProgress,
    slow_ingest,
)
from ui.common import kb_names
from ui.icons import icon
from ui.knowledge_bases.handlers import KBHandlers, user_key
from ui.knowledge_bases.upload_jobs import UploadJobs, resume_interrupted
from ui.knowledge_bases.view import progress_text, results_markdown
from ui.web_files import ReceivedUploads

pytestmark = pytest.mark.usefixtures("fake_model")  # each test starts on the fake model


@pytest.mark.parametrize("name, expected", [(KB, "already exists"), ("x" * 60, "at most 42")])
def test_kb_errors_are_status_lines(name: str, expected: str, service: DocLens) -> None:
    status, picker, table, name_box = KBHandlers(service).create(name, KB)
    assert status.startswith(WARN) and expected in status
    assert picker["value"] == KB and KB in picker["choices"]  # the page stays on the current KB
    assert name_box == gr.skip()
    assert [row[0] for row in table["value"]] == [PHYSICS]


def test_uploads_keep_original_names(service: DocLens, tmp_path: Path) -> None:
    """A real upload as Gradio hands it over: a temp file path, and the user's file name beside it."""
    temp = tmp_path / "gradio" / "5f1c0a" / "upload.pdf"
    temp.parent.mkdir(parents=True)
    shutil.copyfile(SAMPLES / PHYSICS, temp)
    original = "My paper (v2).pdf"
    blocks = gr.Blocks()
    blocks.upload_file_set.add(str(temp))  # as Gradio's /upload route records what it received
    handlers = KBHandlers(service, ReceivedUploads(blocks, tmp_path / "gradio"))
    status, *_ = handlers.create("uploads", KB)
    assert status.startswith(icon("ok"))
    status, table, timer, files, browser = handlers.upload("uploads", [{"path": str(temp), "orig_name": original}])
    assert 'class="dl-progress"' in status and timer["active"] is True and files is None
    assert browser, "a browser's first upload gives it an id"
    job = handlers.jobs.get(f"browser:{browser}", "uploads")
    assert job is not None and job.done.wait(120)
    results, table, picker, timer, _row, _pick = handlers.poll("uploads", browser)
    assert original in results and "indexed" in results and timer["active"] is False
    assert [row[0] for row in table["value"]] == [original]
    assert picker["choices"] == [original] and picker["value"] is None, "nothing is pre-selected for deletion"
    assert [f.file for f in service.figures("uploads")] == [original]


def test_upload_without_files_or_kb_is_a_status_line(service: DocLens) -> None:
    handlers = KBHandlers(service)
    status, *rest = handlers.upload(KB, [])
    assert status.startswith(WARN) and "PDF" in status
    status, *rest = handlers.upload(None, [str(SAMPLES / PHYSICS)])
    assert status.startswith(WARN) and "knowledge base" in status
    assert rest[2] == gr.skip(), "the chosen files are never dropped"


def test_progress_text_and_results() -> None:
    event = ProgressEvent("ocr", file="a.pdf", file_index=1, file_count=2, current=3, total=10)
    assert progress_text(event) == "file 1 of 2 · a.pdf · OCR page 3 of 10"
    assert progress_text(ProgressEvent("done", file_index=2, file_count=2, message="done")) == "file 2 of 2 · done"
    table = results_markdown(
        [IngestResult("a|b.pdf", "indexed", pages=2, chunks=4), IngestResult("b.pdf", "failed", error="encrypted PDF")]
    )
    assert "a\\|b.pdf" in table and f"{icon('ok')} indexed" in table and f"{icon('fail')} failed" in table
    assert "encrypted PDF" in table
    assert results_markdown([]).startswith(WARN)


def test_kb_delete_uses_the_name_the_confirmation_showed(service: DocLens) -> None:
    """Item 1: the service call gets the confirmation's name, never the picker's current value."""
    handlers = KBHandlers(service)
    handlers.create("to-delete", KB)
    row, message, pending = handlers.ask_delete("to-delete")
    assert row["visible"] is True and "to-delete" in message and pending == "to-delete"
    status, row, picker, _table, pending = handlers.delete(pending)
    assert "to-delete" in status and row["visible"] is False and pending is None
    assert "to-delete" not in picker["choices"] and KB in picker["choices"]
    assert handlers.close_confirmation()[1] is None  # a new selection drops the pending name


HOSTILE_NAME = "**x** <img src=x onerror=alert(1)> [link](http://example.com) $5"


def rendered(markdown: str) -> str:
    """The Markdown as HTML (CommonMark with raw HTML allowed, as a page would show it)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).render(markdown)


def test_names_in_confirmations_and_statuses_are_shown_as_typed(service: DocLens) -> None:
    """A knowledge base or file name is text: no emphasis, no HTML element, no link, no math."""
    handlers = KBHandlers(service)
    _row, kb_message, pending = handlers.ask_delete(HOSTILE_NAME)
    _row, doc_message, pending_doc, _status = handlers.ask_delete_document(KB, HOSTILE_NAME)
    assert pending == HOSTILE_NAME and pending_doc == {"kb": KB, "file": HOSTILE_NAME}
    for message in (kb_message, doc_message):
        html_out = rendered(message)
        assert "<img" not in html_out and "<a " not in html_out and "<strong>x</strong>" not in html_out, html_out
        assert "**x**" in html_out and "&lt;img src=x onerror=alert(1)&gt;" in html_out
        assert "$5" not in message, "a name is not math either"


def test_file_delete_is_confirmed_with_its_name(service: DocLens) -> None:
    """Item 2: no document is pre-selected, and deleting one first asks, naming file and KB."""
    handlers = KBHandlers(service)
    assert handlers.file_choices(KB)["value"] is None
    row, message, pending, status = handlers.ask_delete_document(KB, None)
    assert row["visible"] is False and pending is None
    assert "Choose a document first" in status, "issue 26 item 11: said where it shows, not in the hidden row"
    row, message, pending, _status = handlers.ask_delete_document(KB, PHYSICS)
    assert row["visible"] is True and PHYSICS in message and KB in message
    assert pending == {"kb": KB, "file": PHYSICS}
    assert [d.file for d in service.documents(KB)] == [PHYSICS], "asking deletes nothing"


def test_cancel_status_ends_in_the_final_state(service: DocLens, tmp_path: Path) -> None:
    """Item 8: Cancel while nothing runs says so; a cancelled job ends in "nothing was stored"."""
    handlers = KBHandlers(service, jobs=UploadJobs(slow_ingest(service)))
    assert handlers.cancel_upload(KB)[0] == "No upload is running."
    owner = "browser-one"
    job = handlers.jobs.start(user_key(None, owner), KB, [SAMPLES / PHYSICS], ["again.pdf"])
    assert job is not None and handlers.attach(KB, owner)[1]["active"] is True, "a reloaded page re-attaches"
    assert "Cancelling after the current page" in handlers.cancel_upload(KB, owner)[0]
    assert job.done.wait(60)
    status, _table, _picker, timer, _row, _pick = handlers.poll(KB, owner)
    assert "Upload cancelled; nothing was stored." in status and timer["active"] is False
    assert handlers.cancel_upload(KB, owner)[0] == "No upload is running."
    assert [d.file for d in service.documents(KB)] == [PHYSICS]


def test_an_upload_belongs_to_the_browser_that_started_it(service: DocLens) -> None:
    """Without a login, another browser sees that an upload runs in the KB but cannot cancel it; the
    browser that started it (same id after a reload) follows and cancels it."""
    handlers = KBHandlers(service, jobs=UploadJobs(slow_ingest(service)))
    owner, other = "browser-one", "browser-two"
    job = handlers.jobs.start(user_key(None, owner), KB, [SAMPLES / PHYSICS], ["again.pdf"])
    assert job is not None
    status, timer, _row, _pick = handlers.attach(KB, other)
    assert "another browser" in status and timer["active"] is False
    assert "only that browser can cancel it" in handlers.cancel_upload(KB, other)[0]
    assert not job.cancel.is_set(), "another browser cannot cancel it"
    assert handlers.poll(KB, other)[3]["active"] is False
    assert handlers.attach(KB, owner)[1]["active"] is True
    assert "Cancelling after the current page" in handlers.cancel_upload(KB, owner)[0]
    assert job.cancel.is_set() and job.done.wait(60)


def test_a_kb_tab_shown_before_the_page_knows_its_browser_claims_no_upload(service: DocLens) -> None:
    """bench-page (twice in CI): reloaded mid-upload and the KB tab clicked at once, the tab's own step came
    before the page's load had read the browser's id, and said the browser's own upload was "started in
    another browser", over the load's progress bar when it answered last. Without an id it says nothing."""
    handlers = KBHandlers(service, jobs=UploadJobs(slow_ingest(service)))
    owner = "browser-one"
    job = handlers.jobs.start(user_key(None, owner), KB, [SAMPLES / PHYSICS], ["again.pdf"])
    assert job is not None
    assert handlers.attach(KB, None) == (gr.skip(),) * 4
    assert handlers.shown(KB, None, None)[3:] == (gr.skip(),) * 4
    assert handlers.attach(KB, owner)[1]["active"] is True, "the load, with the id, follows it"
    handlers.cancel_upload(KB, owner)
    assert job.done.wait(60)


def test_the_final_state_of_a_cancel_reaches_a_reloaded_page(service: DocLens) -> None:
    """After a reload the timer ticks before the page knows its KB (the KB picker is filled later): such a
    tick must not stop the poll, and a cancel starts it again, so "nothing was stored" always arrives."""
    handlers = KBHandlers(service, jobs=UploadJobs(slow_ingest(service)))
    owner = "browser-one"
    job = handlers.jobs.start(user_key(None, owner), KB, [SAMPLES / PHYSICS], ["again.pdf"])
    assert job is not None and handlers.attach(KB, owner)[1]["active"] is True
    status, _table, _picker, timer, _row, _pick = handlers.poll(None, owner)
    assert timer == gr.skip() and status == gr.skip(), "a tick without a KB leaves the poll and status alone"
    status, timer = handlers.cancel_upload(KB, owner)
    assert "Cancelling after the current page" in status and timer["active"] is True
    assert job.done.wait(60)
    assert "Upload cancelled; nothing was stored." in handlers.poll(KB, owner)[0]


def test_temporary_evaluation_kbs_are_hidden(service: DocLens) -> None:
    """Item 14: "eval 20261201-101010" (made and deleted by an evaluation) never shows in a KB list."""
    service.create_kb("eval 20261201-101010")
    try:
        assert "eval 20261201-101010" not in kb_names(service)
        assert "eval 20261201-101010" in [kb.name for kb in service.list_kbs()]
    finally:
        service.delete_kb("eval 20261201-101010")


def test_selftest_shows_progress(service: DocLens) -> None:
    """Item 15: the recall self-test reports each question as it goes."""
    progress = RecordingProgress()
    report = KBHandlers(service).selftest(KB, 3, progress=progress)
    assert "chunk_top1" in report
    assert [desc for _, desc in progress.calls][-1].startswith("self-test question")
    assert progress.calls[-1][0] == pytest.approx(1.0)


GROUP = ["商业分析示例文档.pdf", "计算机科学示例文档.pdf", PHYSICS]  # small: embedded together in one call


def watched_ingest(service: DocLens, watch):
    """The real ingest; ``watch(event)`` runs after the job has seen each event."""

    def ingest(kb, paths, *, progress, **options):
        def on_progress(event: ProgressEvent) -> None:
            progress(event)
            watch(event)

        return service.ingest(kb, paths, progress=on_progress, **options)

    return ingest


def test_upload_progress_is_per_file_and_never_goes_back(service: DocLens) -> None:
    """Issue 26 item 5: small files wait to be embedded together, so they finish out of order; the bar
    never goes back, and a parsed file shows its pages and chunks at once, not 0 / 0 until the end."""
    fractions: list[float] = []
    waiting_rows: list[list] = []

    def watch(event: ProgressEvent) -> None:
        job = handlers.jobs.get("browser:b", "grouped")
        fractions.append(job.fraction)
        if event.file_index == 1 and event.stage == "embed" and not event.current:
            waiting_rows.extend(handlers.documents_table("grouped")["value"])

    handlers = KBHandlers(service, jobs=UploadJobs(watched_ingest(service, watch)))  # the table reads its jobs
    service.create_kb("grouped")
    job = handlers.jobs.start("browser:b", "grouped", [SAMPLES / name for name in GROUP], GROUP)
    assert job is not None and job.done.wait(180)
    assert [r.status for r in job.results] == ["indexed"] * 3
    assert fractions == sorted(fractions), fractions
    first = next(row for row in waiting_rows if row[0] == GROUP[0])
    assert first[1] == job.results[0].pages and first[2] == job.results[0].chunks, first
    assert "waiting to be embedded" in first[6], first  # name, pages, chunks, figures, size, added, status


def test_one_file_of_an_upload_is_cancelled_from_the_page(service: DocLens) -> None:
    """Issue 26 item 17: the picker lists the running upload's files; cancelling one leaves the others."""
    picked: list[tuple] = []

    def watch(event: ProgressEvent) -> None:
        if event.file_index == 2 and event.stage == "parse" and not picked:
            row, choices = handlers.cancel_picker(handlers.jobs.get("browser:c", "cancel-one"))
            picked.append((row, choices))
            picked.append(handlers.cancel_file("cancel-one", 0, "c"))  # the first one waits to be embedded

    handlers = KBHandlers(service, jobs=UploadJobs(watched_ingest(service, watch)))
    service.create_kb("cancel-one")
    assert handlers.cancel_file("cancel-one", 0, "c")[0] == "No upload is running."
    job = handlers.jobs.start("browser:c", "cancel-one", [SAMPLES / name for name in GROUP], GROUP)
    assert job is not None and job.done.wait(600)  # three files: minutes on a loaded 2-core machine
    (row, choices), (status, *_) = picked
    assert row["visible"] is True and choices["choices"] == [(name, i) for i, name in enumerate(GROUP)]
    assert "Cancelling" in status and GROUP[0] in status and "the other files go on" in status
    assert [r.status for r in job.results] == ["cancelled", "indexed", "indexed"]
    assert sorted(d.file for d in service.documents("cancel-one")) == sorted(GROUP[1:])
    assert handlers.cancel_picker(job)[0]["visible"] is False, "nothing is left to cancel"


def _interrupt_an_upload(service: DocLens, kb: str) -> None:
    """Ctrl-C at page 6 of 20: the pages read and the original are kept for the next start."""

    def interrupt_at_page_6(event: ProgressEvent) -> None:
        if event.stage == "parse" and event.current == 6:
            raise KeyboardInterrupt

    service.create_kb(kb)
    with pytest.raises(KeyboardInterrupt):
        service.ingest(kb, [LAYOUT / "native_zh_en_20p.pdf"], progress=interrupt_at_page_6, display_names=[BOOK])
    assert service.interrupted_uploads(kb) == {kb: [BOOK]}


BOOK = "my book.pdf"


def test_an_upload_resumed_at_start_shows_its_progress_on_every_page_of_its_kb(service: DocLens) -> None:
    """Issue 25 item 6: an upload a restart cut short goes on by itself; every browser on its KB sees its
    bar (file, pages, pages/s once it runs), then how it ended; the KB's other uploads are not disturbed."""
    _interrupt_an_upload(service, "resumed")
    handlers = KBHandlers(service)
    with service._ingest_lock:  # another upload runs: the resumed one waits, and the page says so
        [job] = resume_interrupted(service, handlers.jobs)
        status, timer, row, picker = handlers.attach("resumed", "a browser that never uploaded")
        assert 'class="dl-progress"' in status and "Resuming an upload a restart cut short" in status
        assert BOOK in status and timer["active"] is True
        assert row["visible"] is True and picker["choices"] == [(BOOK, 0)], "no login: anyone may cancel it"
    assert job.done.wait(120)
    status, table, _picker, timer, row, _pick = handlers.poll("resumed", "another browser")
    assert BOOK in status and "indexed" in status and timer["active"] is False and row["visible"] is False
    assert [doc.file for doc in service.documents("resumed")] == [BOOK]
    assert service.interrupted_uploads() == {}
    assert handlers.attach("resumed", "a browser that never uploaded")[0] == "", "done: nothing runs there"


def test_a_resumed_upload_cancelled_from_the_page_does_not_come_back(service: DocLens) -> None:
    _interrupt_an_upload(service, "resumed then cancelled")
    handlers = KBHandlers(service)
    with service._ingest_lock:
        [job] = resume_interrupted(service, handlers.jobs)
        status, timer = handlers.cancel_upload("resumed then cancelled", "some browser")
        assert "Cancelling after the current page" in status and timer["active"] is True
    assert job.done.wait(60)
    assert "nothing was stored" in handlers.poll("resumed then cancelled", "some browser")[0]
    assert service.documents("resumed then cancelled") == [] and service.interrupted_uploads() == {}
