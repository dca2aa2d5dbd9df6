"""An upload killed half-way resumes from the pages it had parsed (issue 25 item 6): a real kill -9 of
the CLI in the middle of a 12-page scan, then the same file again; and the checkpoint file itself."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from backend.ingestion.checkpoint import DonePage, PageCheckpoint
from backend.service import DocLens
from backend.types import Figure, PageText, ProgressEvent
from tests.backend.ingestion.support import LAYOUT
from tests.conftest import MODEL_CACHE, make_settings
from tests.support.kill import kill_when
from tests.support.text_pdf import write_scanned_pdf

KB = "book"
CARGO = "salt tea wool iron copper timber grain silk coal spice cotton amber".split()  # one a page
PAGES = len(CARGO)


@pytest.fixture(scope="module")
def scan(tmp_path_factory) -> Path:
    """A scan of a few lines a page: quick to OCR, yet long enough that the kill lands between pages."""
    pages = [
        [f"The {cargo} ledger, page {n}", f"The {cargo} was weighed at dawn and stored in shed {n} by the quay."]
        for n, cargo in enumerate(CARGO, start=1)
    ]
    return write_scanned_pdf(tmp_path_factory.mktemp("scan") / "ledger.pdf", pages)


def _page(number: int, figures: tuple[Figure, ...] = ()) -> DonePage:
    return DonePage(PageText(number, f"text of page {number}", ocr=True), list(figures))


def test_pages_are_kept_in_order_up_to_a_line_cut_short(tmp_path):
    checkpoint = PageCheckpoint(tmp_path / "parsed" / "doc.jsonl")
    checkpoint.start([])
    for number in (1, 2, 3):
        checkpoint.append(_page(number))
    with checkpoint.path.open("a", encoding="utf-8") as out:
        out.write('{"page": {"page": 4, "te')  # the kill came in the middle of a write
    assert [p.page.page for p in checkpoint.load()] == [1, 2, 3]
    checkpoint.start(checkpoint.load())  # the retry starts from the good lines only
    checkpoint.append(_page(4))
    assert [p.page for p in checkpoint.load()] == [PageText(n, f"text of page {n}", True) for n in (1, 2, 3, 4)]


def test_a_gap_or_a_lost_figure_ends_what_is_kept(tmp_path):
    png = tmp_path / "p2_fig1.png"
    png.write_bytes(b"png")
    figure = Figure("doc/p2_fig1", "doc", "a.pdf", 2, str(png), caption="Figure 1")
    checkpoint = PageCheckpoint(tmp_path / "doc.jsonl")
    checkpoint.start([_page(1), _page(2, (figure,)), _page(3), _page(5)])
    assert [p.page.page for p in checkpoint.load()] == [1, 2, 3]  # page 4 is missing
    assert checkpoint.load()[1].figures == [figure]
    png.unlink()
    assert [p.page.page for p in checkpoint.load()] == [1]
    checkpoint.remove()
    assert checkpoint.load() == []


def _kill_while_parsing(data: Path, pages_before_kill: int, source: Path) -> None:
    env = {**os.environ, "DOCLENS_DATA_DIR": str(data), "DOCLENS_EMBEDDING_CACHE_DIR": str(MODEL_CACHE)}
    command = [sys.executable, "main.py", "ingest", "--kb", KB, "--json", str(source)]
    kill_when(command, lambda: _parsed_lines(data) >= pages_before_kill, "that far", env=env)


def _parsed_lines(data: Path) -> int:
    files = list(data.glob("kbs/*/parsed/*.jsonl"))
    return sum(1 for f in files for line in f.read_text(encoding="utf-8").splitlines() if line.endswith("}"))


def test_a_killed_upload_resumes_after_the_pages_it_had_parsed(tmp_path, scan):
    data = tmp_path / "data"
    with DocLens(make_settings(data)) as service:
        service.create_kb(KB)
    _kill_while_parsing(data, pages_before_kill=4, source=scan)
    kept = _parsed_lines(data)

    events: list[ProgressEvent] = []
    with DocLens(make_settings(data)) as service:  # the start cleans up: nothing half-stored is searchable
        assert service.documents(KB) == [] and service.indexed_chunks(KB) == []
        assert _parsed_lines(data) == kept >= 4
        [result] = service.ingest(KB, [scan], progress=events.append)
        assert result.status == "indexed" and result.pages == PAGES and result.ocr_pages == PAGES, result
        ocr_pages = [e.current for e in events if e.stage == "ocr"]
        assert ocr_pages == list(range(kept + 1, PAGES + 1)), ocr_pages  # not from page 1
        assert any(e.message == f"resuming after page {kept} of {PAGES}" for e in events)
        kb = service.open_kb(KB)
        doc = kb.find_document(scan.name)
        pages = kb.registry.document_text(doc.doc_id)
        assert [number for number, _ in pages] == list(range(1, PAGES + 1))
        assert all(text.strip() for _, text in pages)
        assert CARGO[1] in pages[1][1]
        hits = service.search(KB, f"{CARGO[1]} ledger", mode="keyword", top=3).sources  # read before the kill
        assert any(f"The {CARGO[1]} was weighed" in h.text for h in hits), [h.text for h in hits]
    assert _parsed_lines(data) == 0  # done: the checkpoint is gone


def test_a_killed_upload_goes_on_by_itself_without_its_file(tmp_path, scan):
    """After a kill -9 the upload is finished at the next start (the web app, or ``ingest --resume``)
    from the pages it had read: its original is kept with them, so the file need not come again."""
    data, upload = tmp_path / "data", tmp_path / "upload" / "my book.pdf"
    upload.parent.mkdir()
    shutil.copyfile(scan, upload)
    with DocLens(make_settings(data)) as service:
        service.create_kb(KB)
    _kill_while_parsing(data, pages_before_kill=4, source=upload)
    upload.unlink()  # a web upload's temporary copy is gone after a restart
    events: list[ProgressEvent] = []
    with DocLens(make_settings(data)) as service:
        kb = service.open_kb(KB)
        kept = _parsed_lines(data)
        assert service.documents(KB) == [] and [name for _, name in kb.interrupted_uploads()] == ["my book.pdf"]
        [result] = service.resume_interrupted(events.append)
        assert result.status == "indexed" and result.file == "my book.pdf" and result.pages == PAGES, result
        assert [e.current for e in events if e.stage == "ocr"] == list(range(kept + 1, PAGES + 1))
        [doc] = service.documents(KB)
        assert doc.file == "my book.pdf" and kb.original_pdf(doc.doc_id).is_file()
        assert kb.interrupted_uploads() == [] and not list(data.glob("kbs/*/parsed/*"))
        assert service.resume_interrupted() == []  # nothing left: a second start does nothing


def test_ingest_resume_says_when_there_is_nothing_to_resume(tmp_path):
    data = tmp_path / "data"
    with DocLens(make_settings(data)) as service:
        service.create_kb(KB)
    env = {**os.environ, "DOCLENS_DATA_DIR": str(data), "DOCLENS_EMBEDDING_CACHE_DIR": str(MODEL_CACHE)}
    run = subprocess.run(
        [sys.executable, "main.py", "ingest", "--kb", KB, "--resume"], env=env, capture_output=True, text=True
    )
    assert run.returncode == 0 and "no interrupted upload to resume" in run.stdout, (run.stdout, run.stderr)


def test_pages_nobody_came_back_for_are_removed_at_start_after_a_week(tmp_path):
    data = tmp_path / "data"
    with DocLens(make_settings(data)) as service:
        kb = service.open_kb(service.create_kb(KB).name)
    for doc_id, age_days in (("old", 8), ("recent", 1)):
        PageCheckpoint(kb.parsed_pages(doc_id)).start([_page(1)])
        kb.figure_dir(doc_id).mkdir(parents=True)
        then = time.time() - age_days * 86400
        os.utime(kb.parsed_pages(doc_id), (then, then))
    with DocLens(make_settings(data)):
        pass
    assert not kb.parsed_pages("old").exists() and not kb.figure_dir("old").exists()
    assert kb.parsed_pages("recent").exists() and kb.figure_dir("recent").exists()


def test_ctrl_c_keeps_the_pages_read_and_a_cancel_does_not(fresh_service):
    native = LAYOUT / "native_zh_en_20p.pdf"
    fresh_service.create_kb(KB)

    def interrupt_at_page_6(event: ProgressEvent) -> None:
        if event.stage == "parse" and event.current == 6:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fresh_service.ingest(KB, [native], progress=interrupt_at_page_6)
    kb = fresh_service.open_kb(KB)
    assert fresh_service.documents(KB) == [] and fresh_service.indexed_chunks(KB) == []
    [parsed] = list(kb.folder.glob("parsed/*.jsonl"))
    assert len(parsed.read_text(encoding="utf-8").splitlines()) == 5  # page 6 was being handed over

    cancel = threading.Event()

    def cancel_at_page_8(event: ProgressEvent) -> None:
        if event.stage == "parse" and event.current == 8:
            cancel.set()

    [result] = fresh_service.ingest(KB, [native], progress=cancel_at_page_8, cancel=cancel)
    assert result.status == "cancelled" and not parsed.exists()  # cancelled: nothing is kept
    events: list[ProgressEvent] = []
    [result] = fresh_service.ingest(KB, [native], progress=events.append)
    assert result.status == "indexed" and [e.current for e in events if e.stage == "parse"][0] == 1


def test_a_resumed_scan_drops_its_running_header_as_a_whole_run_does(fresh_service, tmp_path):
    """The first page OCR'd after a resume kept its running header: the line repeated atop the page before
    is what marks it, and the resumed run had not read that page. Each kept page now carries it."""
    header = "Harbour Notes of the Lighthouse Keeper"
    pages = [[header, f"On day {n} the keeper logged the tide at dawn and at dusk."] for n in range(1, 6)]
    scan = write_scanned_pdf(tmp_path / "tides.pdf", pages)

    def stop_at_page_3(event: ProgressEvent) -> None:
        if event.stage == "ocr" and event.current == 3:
            raise KeyboardInterrupt

    for kb in ("whole", KB):
        fresh_service.create_kb(kb)
    fresh_service.ingest("whole", [scan])
    with pytest.raises(KeyboardInterrupt):
        fresh_service.ingest(KB, [scan], progress=stop_at_page_3)
    [result] = fresh_service.ingest(KB, [scan])
    assert result.status == "indexed"
    resumed, whole = (_page_texts(fresh_service, kb, scan.name) for kb in (KB, "whole"))
    assert header not in resumed[2], resumed[2]  # page 3, the first one read after the resume
    assert resumed == whole


def _page_texts(service: DocLens, kb_name: str, file: str) -> list[str]:
    kb = service.open_kb(kb_name)
    return [text for _, text in kb.registry.document_text(kb.find_document(file).doc_id)]
