"""Small real PDFs with a text layer, written with pdfium itself (no extra package): one line per text object."""

from __future__ import annotations

import ctypes
import textwrap
from pathlib import Path
from typing import Sequence

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

PAGE_SIZE = (612, 792)  # US Letter, points


def write_text_pdf(
    path: Path, pages: Sequence[Sequence[str]], font_size: float = 11.0, width_chars: int = 90, top: float = 72
) -> Path:
    """One page per item of ``pages``; each paragraph is wrapped into lines of Helvetica at ``font_size``.

    The first baseline is ``top`` points below the page's top edge (under 70 puts it in the running-header zone)."""
    pdf = pdfium.PdfDocument.new()
    try:
        for paragraphs in pages:
            page = pdf.new_page(*PAGE_SIZE)
            y = PAGE_SIZE[1] - top
            for paragraph in paragraphs:
                for line in textwrap.wrap(paragraph, width_chars) or [""]:
                    _add_line(pdf, page, line, 72, y, font_size)
                    y -= font_size * 1.5
                y -= font_size
            pdfium_c.FPDFPage_GenerateContent(page.raw)
        pdf.save(str(path))
    finally:
        pdf.close()
    return path


def _add_line(pdf, page, line: str, x: float, y: float, font_size: float) -> None:
    obj = pdfium_c.FPDFPageObj_NewTextObj(pdf.raw, b"Helvetica", ctypes.c_float(font_size))
    buffer = ctypes.create_string_buffer((line + "\0").encode("utf-16-le"))
    pdfium_c.FPDFText_SetText(obj, ctypes.cast(buffer, ctypes.POINTER(pdfium_c.FPDF_WCHAR)))
    pdfium_c.FPDFPageObj_Transform(obj, 1, 0, 0, 1, x, y)
    pdfium_c.FPDFPage_InsertObject(page.raw, obj)


def write_scanned_pdf(path: Path, pages: Sequence[Sequence[str]], dpi: int = 200, font_size: float = 12.0) -> Path:
    """The same pages as ``write_text_pdf``, but as pictures only (no text layer): what a scanner makes."""
    from PIL import Image

    source = write_text_pdf(path.with_name(path.stem + "-source.pdf"), pages, font_size=font_size)
    pdf = pdfium.PdfDocument(str(source))
    try:
        images: list[Image.Image] = []
        for page in pdf:
            bitmap = page.render(scale=dpi / 72.0)
            images.append(bitmap.to_pil().convert("L"))
            bitmap.close()
            page.close()
    finally:
        pdf.close()
    source.unlink()
    images[0].save(path, format="PDF", resolution=float(dpi), save_all=True, append_images=images[1:])
    return path


def repeat_pages(path: Path, times: int) -> Path:
    """The PDF's pages over and over, ``times`` in all: a long document at the cost of a short one."""
    written = path.with_name(path.stem + "-long.pdf")
    source = pdfium.PdfDocument(str(path))
    longer = pdfium.PdfDocument.new()
    try:
        for _ in range(times):
            longer.import_pages(source)
        longer.save(str(written))
    finally:
        longer.close()
        source.close()
    written.replace(path)
    return path
