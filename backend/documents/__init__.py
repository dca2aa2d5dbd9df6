"""PDF documents: validation, page-by-page parsing (text, tables, figures, OCR) and chunking."""

from backend.documents.chunking import chunk_pages
from backend.documents.figures import PageFigure, save_figure
from backend.documents.ocr import OCREngine, get_ocr_engine
from backend.documents.pdf import ParsedPage, inspect_pdf, iter_pages, parse_pdf

__all__ = [
    "OCREngine",
    "PageFigure",
    "ParsedPage",
    "chunk_pages",
    "get_ocr_engine",
    "inspect_pdf",
    "iter_pages",
    "parse_pdf",
    "save_figure",
]
