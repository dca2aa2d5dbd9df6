"""bench-ingest --stages: each ingest stage's seconds, set against what the slowest stage does alone.

The pipeline overlaps its stages (the next file is parsed and its scans OCR'd while the current chunks are
embedded), so its wall time can come close to its slowest stage alone and no closer. That stage's
ceiling is measured in the same run, on the same input: the embedder alone on the same chunks, the OCR
engine alone on the same scanned pages (at the pipeline's resolution and number of threads). The OCR
text is scored against the text layer of a native twin where one is given (``--twin``) or found
beside the scan (``scanned_X.pdf`` beside ``native_X.pdf``).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from rapidfuzz.distance import Levenshtein

from backend.documents.figures import image_boxes
from backend.documents.limits import PageLimits
from backend.documents.ocr import get_ocr_engine
from backend.documents.ocr.ahead import OCRAhead
from backend.documents.pdf_checks import open_pdf
from backend.documents.pdfium_lock import PDFIUM_LOCK
from backend.documents.scanned import render_scan, scanned_pages
from backend.service import DocLens
from backend.settings import Settings
from backend.stage_times import STAGES, StageTimes
from backend.text import CJK

PARSING = ("open_parse", "layout", "tables", "figures", "formulas", "chunking")  # one thread, page by page
OCR = ("ocr_rendering", "ocr_detection", "ocr_recognition", "ocr_other")


def pdf_files(paths: Sequence[Path]) -> list[Path]:
    """The PDFs ``paths`` name, folders searched (as an upload of them would)."""
    return [p for path in paths for p in (sorted(path.rglob("*.pdf")) if path.is_dir() else [path])]


def stage_figures(
    service: DocLens, kb: str, files: Sequence[Path], times: StageTimes, wall: float, twins: Mapping[Path, Path]
) -> dict[str, Any]:
    """Per stage its seconds; the embedder's and the OCR's ceilings measured now; the wall time against the
    slowest stage alone; and the OCR's character error rate where a twin gives the true text."""
    chunks = [c.content for c in service.indexed_chunks(kb)]
    embed_alone = _embedder_alone(service, chunks)
    ocr = ocr_alone(service.settings, files)
    alone = {
        "embedding": embed_alone,
        "ocr": ocr["seconds"],
        "parsing": sum(times.seconds.get(s, 0.0) for s in PARSING),
        "storing": times.seconds.get("storing", 0.0),
    }
    slowest = max(alone, key=lambda k: alone[k])
    return {
        "stage_seconds": {s: round(times.seconds.get(s, 0.0), 2) for s in STAGES},
        "embedder_alone_chunks_per_s": round(len(chunks) / embed_alone, 1) if embed_alone else 0.0,
        "ocr_alone_s_per_page": round(ocr["seconds"] / ocr["pages"], 3) if ocr["pages"] else 0.0,
        "stage_alone_seconds": {k: round(v, 2) for k, v in alone.items()},
        "slowest_stage": slowest,
        "ratio_to_slowest_stage": round(wall / alone[slowest], 2) if alone[slowest] else 0.0,
        "ocr_cer": ocr_cer(ocr["texts"], twins),
    }


def _embedder_alone(service: DocLens, chunks: Sequence[str]) -> float:
    started = time.perf_counter()
    service.embedder.embed_passages(list(chunks))
    return time.perf_counter() - started


def ocr_alone(settings: Settings, files: Sequence[Path]) -> dict[str, Any]:
    """The scanned pages of ``files`` OCR'd as parsing OCRs them, and nothing else: seconds, pages, texts."""
    engine = get_ocr_engine(settings)
    texts: dict[tuple[Path, int], str] = {}
    seconds = 0.0
    for path in files:
        pages = scanned_pages(path, settings)
        if not pages:
            continue
        started = time.perf_counter()
        texts.update({(path, i): text for i, text in _ocr_file(path, pages, settings, engine).items()})
        seconds += time.perf_counter() - started
    return {"seconds": seconds, "pages": len(texts), "texts": texts}


def _ocr_file(path: Path, pages: Sequence[int], settings: Settings, engine) -> dict[int, str]:
    limits = PageLimits(path.name, settings.ingest)
    with PDFIUM_LOCK:
        pdf = open_pdf(path)

    def render(index: int):
        page = pdf[index]
        try:
            return render_scan(page, image_boxes(page), limits, settings.ocr.dpi, index)
        finally:
            page.close()

    ahead = OCRAhead(engine, render, pages, formulas=False)  # the engine's own reading
    try:
        with PDFIUM_LOCK:  # as parsing holds it: OCRAhead lets go of it while it waits
            return {index: ahead.page(index).text for index in pages}
    finally:
        ahead.close()
        with PDFIUM_LOCK:
            pdf.close()


# -- how good the OCR text is -----------------------------------------------------------------------


def find_twins(files: Sequence[Path], given: Sequence[str] = ()) -> dict[Path, Path]:
    """Scan -> native twin: ``SCAN=NATIVE`` pairs given, and ``scanned_X.pdf`` beside ``native_X.pdf``."""
    twins = {Path(a): Path(b) for a, _, b in (pair.partition("=") for pair in given)}
    for path in files:
        native = path.with_name(path.name.replace("scanned_", "native_", 1))
        if path.name.startswith("scanned_") and native.is_file():
            twins.setdefault(path, native)
    return twins


def ocr_cer(texts: Mapping[tuple[Path, int], str], twins: Mapping[Path, Path]) -> Optional[dict[str, Any]]:
    """Character error rate of each OCR'd page against the same page of its twin's text layer, and over
    all of them (edit distance / reference length, whitespace folded); None without a twin."""
    per_page: dict[str, float] = {}
    errors = length = 0
    layers: dict[Path, list[str]] = {}  # each twin read once
    for (path, index), text in sorted(texts.items()):
        twin = twins.get(path)
        if twin is None:
            continue
        if twin not in layers:
            layers[twin] = text_layers(twin)
        reference = _normalised(layers[twin][index])
        distance = Levenshtein.distance(_normalised(text), reference)
        per_page[f"{path.name} p{index + 1}"] = round(distance / max(1, len(reference)), 4)
        errors, length = errors + distance, length + len(reference)
    if not per_page:
        return None
    return {"all": round(errors / max(1, length), 4), "pages": per_page}


def text_layers(path: Path) -> list[str]:
    """The text layer of each page of ``path``, as pdfium gives it."""
    with PDFIUM_LOCK:
        pdf = open_pdf(path)
        try:
            return [_page_text(pdf[index]) for index in range(len(pdf))]
        finally:
            pdf.close()


def _page_text(page) -> str:
    textpage = page.get_textpage()
    try:
        return textpage.get_text_range()
    finally:
        textpage.close()
        page.close()


def _normalised(text: str) -> str:
    """Whitespace folded to one space, and none between two CJK characters (a line break there is layout)."""
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(rf"(?<=[{CJK}]) (?=[{CJK}])", "", text)
