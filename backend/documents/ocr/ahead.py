"""Scanned pages OCR'd on worker threads a few pages ahead of the parser, and the resolution they are
rendered at."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Sequence

from PIL import Image

from backend.documents.equations import DrawnFormula, ScannedFormulas
from backend.documents.ocr.engines import OCREngine
from backend.documents.ocr.runtime import ocr_workers
from backend.documents.pdfium_lock import PDFIUM_LOCK
from backend.stage_times import WAITING, carrying_file, stage


class OCRAhead:
    """OCR of the scanned pages on worker threads, a few pages ahead of the reader.

    One page per worker, each model run single-threaded: the recogniser's many small convolutions scale
    badly across threads (measured ~35 % more CPU for 2 threads), whole pages in parallel do not. Pages
    are rendered on the calling thread only (pdfium is not thread-safe); results come back in page order.
    """

    def __init__(
        self,
        engine: OCREngine,
        render: Callable[[int], Image.Image],
        pages: Sequence[int],
        formulas: bool = True,
    ) -> None:
        self._engine = engine
        self._render = render
        self._queue = list(pages)  # scanned page indexes not yet submitted, ascending
        self._workers = ocr_workers()
        self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="ocr")
        self._futures: dict[int, Future[OCRPage]] = {}
        self._formulas = formulas  # cut display equations out (OCR garbles them), where the engine can

    @stage(WAITING)
    def page(self, index: int) -> OCRPage:
        """What OCR read on page ``index``; keeps the next scanned pages in flight meanwhile."""
        self._queue = [i for i in self._queue if i != index]
        if index not in self._futures:
            self._submit(index)
        while self._queue and len(self._futures) < self._workers:
            self._submit(self._queue.pop(0))
        return _wait_without_pdfium_lock(self._futures.pop(index))

    def _submit(self, index: int) -> None:
        self._futures[index] = self._pool.submit(carrying_file(self._read), index, self._render(index))

    def _read(self, index: int, image: Image.Image) -> OCRPage:
        marking = getattr(self._engine, "recognize_marking", None) if self._formulas else None
        if marking is None:
            return OCRPage(self._engine.recognize(image))
        formulas = ScannedFormulas(index + 1, image)
        return OCRPage(marking(image, formulas.mark), formulas.found)

    def close(self) -> None:
        # A page still in flight finishes in the background: cancel must not wait for it.
        self._pool.shutdown(wait=False, cancel_futures=True)


@dataclass
class OCRPage:
    """A scanned page's text, and the images of the display equations in it (``equations.ScannedFormulas``)."""

    text: str
    formulas: list[DrawnFormula] = field(default_factory=list)


def _wait_without_pdfium_lock(future: Future[OCRPage]) -> OCRPage:
    """OCR takes seconds and makes no pdfium call: previews may render meanwhile."""
    try:
        PDFIUM_LOCK.release()
    except RuntimeError:  # not held by this thread
        return future.result()
    try:
        return future.result()
    finally:
        PDFIUM_LOCK.acquire()


def ocr_dpi(configured: int, images: Sequence[tuple]) -> float:
    """Rendering a scan above its own resolution adds pixels but no detail (and the detector shrinks the
    page to det_limit_side_len anyway): use the scan's resolution, at least 150 dpi, at most ocr.dpi."""
    native = [px[0] / max(1e-6, (b[2] - b[0]) / 72.0) for b, px in images if px and px[0]]
    if not native:
        return float(configured)
    return float(min(configured, max(150.0, max(native))))
