"""OCR: the engines that read a page image (``engines``), their lines put in reading order as text
(``page_text``), scanned pages read on worker threads ahead of the parser (``ahead``) and the runtime the
bundled models run on (``runtime``)."""

from backend.documents.ocr.engines import (
    OCREngine,
    PaddleOCREngine,
    PPStructureAPIEngine,
    RapidOCREngine,
    get_ocr_engine,
)
from backend.documents.ocr.page_text import MarkFormula, OCRBox, boxes_to_text, page_text

__all__ = [
    "MarkFormula",
    "OCRBox",
    "OCREngine",
    "PPStructureAPIEngine",
    "PaddleOCREngine",
    "RapidOCREngine",
    "boxes_to_text",
    "get_ocr_engine",
    "page_text",
]
