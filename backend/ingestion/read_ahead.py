"""Reading the next file of an upload ahead, on a background thread, while the current one is embedded."""

from __future__ import annotations

import queue
import threading
from typing import Iterator, Optional, Sequence

from backend.documents.ocr import get_ocr_engine
from backend.documents.pdf import ParsedPage, inspect_pdf, iter_pages
from backend.documents.scanned import has_scanned_pages
from backend.errors import CancelledError
from backend.ingestion.checkpoint import PageCheckpoint, carried
from backend.ingestion.uploads import UploadItem, check_readable, doc_id_of, file_sha256
from backend.knowledge_bases.open_kb import OpenKB
from backend.settings import Settings
from backend.stage_times import working_on

READ_AHEAD_PAGES = 32  # parsed pages of the next file held at most, figures included


class PageReader:
    """One file's pages parsed on a background thread, handed over in order through a bounded queue.

    A file with pages to OCR waits for its turn: OCR keeps both cores busy, and running it beside the
    embedding of the file before made both slower. Errors are raised where the pages are read, so a bad
    file fails with the same message either way."""

    _END = object()

    def __init__(
        self,
        item: UploadItem,
        sha: str,
        page_count: int,
        settings: Settings,
        cancel: Optional[threading.Event],
        first_page: int = 0,  # pages an interrupted upload of it parsed already (ingestion.checkpoint)
        carry: Optional[dict] = None,  # what the page before first_page hands on (documents.pdf)
    ) -> None:
        self.item = item
        self.sha = sha
        self.page_count = page_count
        self.first_page = first_page
        self._carry = carry
        self._settings = settings
        self._cancel = cancel
        self._queue: queue.Queue = queue.Queue(maxsize=READ_AHEAD_PAGES)
        self._stop = threading.Event()
        self._turn = threading.Event()
        self._thread = threading.Thread(target=self._read, name="read-ahead", daemon=True)
        self._thread.start()

    def pages(self) -> Iterator[ParsedPage]:
        while True:
            try:
                got = self._queue.get(timeout=0.1)
            except queue.Empty:
                if self._thread.is_alive():
                    continue
                raise CancelledError(f"{self.item.name}: cancelled") from None  # it stopped without an end mark
            if got is self._END:
                return
            if isinstance(got, BaseException):
                raise got
            yield got

    def begin(self) -> None:
        """It is this file's turn: pages that need OCR may start too."""
        self._turn.set()

    def stop(self) -> None:
        """Stops reading (after the page in hand) and waits: no parsing outlives its upload."""
        self._stop.set()
        while self._thread.is_alive():
            self._drain()
            self._thread.join(timeout=0.1)

    def _read(self) -> None:
        with working_on(self.item.name):
            self._read_parsed()

    def _read_parsed(self) -> None:
        try:
            if has_scanned_pages(self.item.path, self._settings) and not self._wait_for_turn():
                return
            self._read_pages()
        except BaseException as exc:  # handed to the reading thread, which reports it
            self._hand_over(exc)

    def _wait_for_turn(self) -> bool:
        while not self._turn.wait(timeout=0.1):
            if self._stopped():
                return False
        return True

    def _read_pages(self) -> None:
        pages = iter_pages(self.item.path, self._settings, get_ocr_engine(self._settings), self.first_page, self._carry)
        try:
            for page in pages:
                if not self._hand_over(page):
                    return
            self._hand_over(self._END)
        finally:
            pages.close()

    def _hand_over(self, value: object) -> bool:
        while not self._stopped():
            try:
                self._queue.put(value, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _stopped(self) -> bool:
        return self._stop.is_set() or (self._cancel is not None and self._cancel.is_set())

    def _drain(self) -> None:
        try:
            while True:
                self._queue.get_nowait()
        except queue.Empty:
            pass


class ReadAhead:
    """Reads the next file of an upload while the current one is embedded: parsing is single-threaded,
    so it uses the core that embedding leaves idle between batches. At most one reader runs at a time."""

    def __init__(self, items: Sequence[UploadItem], settings: Settings, cancel: Optional[threading.Event]) -> None:
        self._items = list(items)
        self._settings = settings
        self._cancel = cancel
        self._reader: Optional[PageReader] = None

    def start_after(self, item: UploadItem, kb: OpenKB) -> None:
        following = next((self._items[i + 1] for i, it in enumerate(self._items[:-1]) if it is item), None)
        if following is None or self._reader is not None or (self._cancel is not None and self._cancel.is_set()):
            return
        try:  # a file that fails these checks fails them again on its turn, with its message
            check_readable(following)
            sha = file_sha256(following.path)
            if kb.registry.document_by_sha(sha) is not None:
                return  # a duplicate is skipped on its turn: nothing to read
            page_count = inspect_pdf(following.path, self._settings)
        except Exception:
            return
        done = PageCheckpoint(kb.parsed_pages(doc_id_of(sha))).load()
        self._reader = PageReader(following, sha, page_count, self._settings, self._cancel, len(done), carried(done))

    def take(self, item: UploadItem) -> Optional[PageReader]:
        """The reader started for ``item``, now owned by the caller; None if it was not read ahead."""
        reader = self._reader
        if reader is None or reader.item is not item:
            return None
        self._reader = None
        reader.begin()
        return reader

    def close(self) -> None:
        if self._reader is not None:
            self._reader.stop()
            self._reader = None
