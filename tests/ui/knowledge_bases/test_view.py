"""What the Knowledge base tab shows of a running upload (ui/knowledge_bases/view.py)."""

from __future__ import annotations

from backend.types import Pace, ProgressEvent
from tests.support.clock import Clock
from ui.knowledge_bases.upload_jobs import UploadJob
from ui.knowledge_bases.view import job_progress_html


def test_the_upload_bar_says_how_fast_and_how_long_the_file_still_takes_in_both_languages() -> None:
    """Issue 25 item 6: pages/s and the time left of a long document, beside the bar, in the user's language."""
    clock = Clock()
    job = UploadJob("browser:1", "kb", ["book.pdf"], pace=Pace(clock))
    job.record(ProgressEvent("ocr", "book.pdf", 1, 1, 1, 500))
    assert "left" not in job_progress_html(job, "en")
    clock.now += 10.0
    job.record(ProgressEvent("ocr", "book.pdf", 1, 1, 5, 500))
    assert "OCR page 5 of 500 · 0.40 pages/s · about 21 min left" in job_progress_html(job, "en")
    assert "OCR 识别页 5/500 · 每秒 0.40 页 · 约剩 21 分钟" in job_progress_html(job, "zh")
    job.record(ProgressEvent("store", "book.pdf", 1, 1, 1, 1))
    assert "left" not in job_progress_html(job, "en"), "only the stage in hand is timed"
