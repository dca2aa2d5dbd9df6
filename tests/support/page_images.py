"""A PDF's first page as a picture, as OCR and the layout model receive a scanned page."""

from __future__ import annotations

from pathlib import Path

import pypdfium2 as pdfium
from PIL import Image


def first_page(path: Path, dpi: int = 150, top: float = 1.0) -> Image.Image:
    """The first page in RGB at ``dpi``; ``top``: the share of its height kept, from the top edge (a test
    that OCRs the page several times needs a few lines of it, not all of them)."""
    pdf = pdfium.PdfDocument(str(path))
    try:
        image = pdf[0].render(scale=dpi / 72).to_pil().convert("RGB")
    finally:
        pdf.close()
    return image.crop((0, 0, image.width, round(image.height * top))) if top < 1.0 else image
