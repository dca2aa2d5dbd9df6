"""Reading the next file of an upload ahead, on a background thread, while the current one is embedded."""

from __future__ import annotations

import queue
import threading
from typing import Callable, Iterator, Optional, Sequence

from backend.documents.ocr import get_ocr_engine
from backend.documents.pdf import ParsedPage, inspect_pdf, iter_pages
from backend.documents.scanned import has_scanned_pages
from backend.errors import CancelledError
from backend.ingestion.checkpoint import PageCheckpoint, carried
from backend.ingestion.uploads import UploadItem, check_readable, doc_id_of, file_sha256
from backend.knowledge_bases.open_kb import OpenKB
from backend.settings import Settings
from backend.stage_times import working_on

READ_AHEAD_PAGES = 32  # parsed pages of one file held at most, figures included
AHEAD_FILES = 4  # files read ahead at most
AHEAD_PAGES = 64  # pages of the files read ahead, at most (one file may have more)


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
        on_read: Optional[Callable[[], None]] = None,  # called on its thread once the file is read whole
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
        self._on_read = on_read
        self.finished = False  # every page is parsed and handed over (a file that fails never is)
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
        self.finished = True
        if self._on_read is not None:
            self._on_read()

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
    """Reads the next files of an upload while the current one is embedded: parsing is single-threaded,
    so it uses what embedding leaves idle between batches. Files are read one after another on their own
    threads, each starting when the one before has been read whole, up to AHEAD_FILES files or
    AHEAD_PAGES pages not yet taken (the first one may be of any size): small files are ready by their
    turn, a big one holds the chain."""

    def __init__(self, items: Sequence[UploadItem], settings: Settings, cancel: Optional[threading.Event]) -> None:
        self._items = list(items)
        self._places = {id(item): place for place, item in enumerate(self._items)}  # an upload may hold 10,000
        self._settings = settings
        self._cancel = cancel
        self._lock = threading.Lock()
        self._readers: dict[int, PageReader] = {}  # by the file's place in the upload, not yet taken
        self._next = 0  # the place of the next file to read ahead
        self._kb: Optional[OpenKB] = None
        self._known: dict[int, Optional[tuple[str, int]]] = {}  # by place: digest and page count
        self._closed = False

    def start_after(self, item: UploadItem, kb: OpenKB) -> None:
        """``item`` is being read now: the files after it are read ahead, one after another."""
        with self._lock:
            self._kb = kb
            self._next = max(self._next, self._place(item) + 1)
            self._fill()

    def take(self, item: UploadItem) -> Optional[PageReader]:
        """The reader started for ``item``, now owned by the caller; None if it was not read ahead."""
        with self._lock:
            place = self._place(item)
            skipped = [self._readers.pop(p) for p in list(self._readers) if p < place]  # files not started
            reader = self._readers.pop(place, None)
            self._next = max(self._next, place + 1)
            self._fill()
        for unread in skipped:  # not under the lock: a reader takes it when it has read its file
            unread.stop()
        if reader is not None:
            reader.begin()
        return reader

    def read_whole(self) -> list[str]:
        """The names of the files read ahead whole, waiting for their turn, in upload order."""
        with self._lock:
            return [self._readers[place].item.name for place in sorted(self._readers) if self._readers[place].finished]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            readers, self._readers = list(self._readers.values()), {}
        for reader in readers:
            reader.stop()

    def _place(self, item: UploadItem) -> int:
        return self._places[id(item)]

    def _fill(self) -> None:
        """Starts the next file's reader if the ones held are read whole and there is room (lock held)."""
        if self._closed or self._kb is None or (self._cancel is not None and self._cancel.is_set()):
            return
        held = list(self._readers.values())
        if len(held) >= AHEAD_FILES or any(not r.finished for r in held):
            return
        room = AHEAD_PAGES - sum(r.page_count for r in held) if held else None  # the first may be any size
        while self._next < len(self._items):
            place = self._next
            known = self._inspect(place, self._kb, {r.sha for r in held})
            if known is not None and room is not None and known[1] > room:
                return  # it is read ahead once the files before it are taken
            self._next += 1
            if known is not None:
                self._readers[place] = self._reader(self._items[place], self._kb, *known)
                return

    def _inspect(self, place: int, kb: OpenKB, shas: set[str]) -> Optional[tuple[str, int]]:
        """The file's digest and page count (asked once per file); None if it is not to be read ahead."""
        if place not in self._known:
            item = self._items[place]
            try:  # a file that fails these checks fails them again on its turn, with its message
                check_readable(item)
                self._known[place] = (file_sha256(item.path), inspect_pdf(item.path, self._settings))
            except Exception:
                self._known[place] = None
        known = self._known[place]
        if known is None or known[0] in shas or _indexed(kb, known[0]):
            return None  # a duplicate is skipped on its turn: nothing to read
        return known

    def _reader(self, item: UploadItem, kb: OpenKB, sha: str, page_count: int) -> PageReader:
        done = PageCheckpoint(kb.parsed_pages(doc_id_of(sha))).load()
        return PageReader(item, sha, page_count, self._settings, self._cancel, len(done), carried(done), self._read)

    def _read(self) -> None:
        """A reader has read its file whole: the next may start."""
        with self._lock:
            self._fill()


def _indexed(kb: OpenKB, sha: str) -> bool:
    """Whether the knowledge base holds this content already; a knowledge base deleted meanwhile is said
    so on the file's own turn, not on a reader's thread."""
    try:
        return kb.registry.document_by_sha(sha) is not None
    except Exception:
        return True
