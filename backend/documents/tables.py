"""Ruled tables: pdfplumber finds the grid, pypdfium2's chars fill the cells, the result is Markdown.

pdfplumber only supplies cell boxes because it silently reads no text from OpenType/CFF fonts, which
pypdfium2 reads fine. It is slow, so it runs only on pages whose path objects look like ruling.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from backend.documents.layout import BBox, Char, TextLine, center_inside, line_from_chars

log = logging.getLogger(__name__)


@dataclass
class Table:
    box: BBox
    rows: list[list[str]]

    def to_markdown(self) -> str:
        width = max(len(r) for r in self.rows)
        rows = [r + [""] * (width - len(r)) for r in self.rows]
        lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * width]
        lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
        return "\n".join(lines)


def has_ruling(paths: Sequence[tuple[BBox, int]]) -> bool:
    """Thin horizontal and vertical lines, or several rectangles: worth asking pdfplumber."""
    horizontal = sum(1 for b, _ in paths if b[3] - b[1] <= 2.5 and b[2] - b[0] >= 15)
    vertical = sum(1 for b, _ in paths if b[2] - b[0] <= 2.5 and b[3] - b[1] >= 10)
    rectangles = sum(1 for b, n in paths if n <= 6 and b[2] - b[0] >= 8 and b[3] - b[1] >= 8)
    return (horizontal >= 2 and vertical >= 2) or rectangles >= 4 or (horizontal >= 3 and rectangles >= 2)


def find_tables(plumber_page: Any, page_height: float, page_width: float, chars: Sequence[Char]) -> list[Table]:
    """Tables on the page with at least two rows and two columns of text; layout boxes are skipped."""
    tables: list[Table] = []
    for found in plumber_page.find_tables():
        x0, top, x1, bottom = found.bbox
        box = (x0, page_height - bottom, x1, page_height - top)
        if (box[2] - box[0]) * (box[3] - box[1]) > 0.5 * page_width * page_height:
            continue  # a frame around the whole page, not a table
        rows = [[_cell_text(cell, page_height, chars) for cell in row.cells] for row in found.rows]
        if _looks_like_table(rows):
            tables.append(Table(box, rows))
    return tables


def _cell_text(cell: Optional[tuple[float, float, float, float]], page_height: float, chars: Sequence[Char]) -> str:
    if cell is None:
        return ""  # merged into a neighbour
    x0, top, x1, bottom = cell
    area = (x0, page_height - bottom, x1, page_height - top)
    text = "".join(c.text for c in chars if center_inside(c.box, area))
    return re.sub(r"\s+", " ", text).strip().replace("|", "\\|")


def _looks_like_table(rows: list[list[str]]) -> bool:
    filled_rows = [r for r in rows if sum(1 for cell in r if cell) >= 2]
    return len(rows) >= 2 and len(filled_rows) >= 2 and max(len(r) for r in rows) >= 2


def remove_table_text(lines: Sequence[TextLine], tables: Sequence[Table]) -> list[TextLine]:
    """Drop the chars that fall inside a table so the table is not repeated in the body text."""
    kept: list[TextLine] = []
    for line in lines:
        if line.block or not any(_overlaps(line.box, t.box) for t in tables):
            kept.append(line)
            continue
        chars = [c for c in line.chars if not any(center_inside(c.box, t.box, pad=1.0) for t in tables)]
        rest = line_from_chars(chars)
        if rest is not None:
            kept.append(rest)
    return kept


def table_blocks(tables: Sequence[Table]) -> list[TextLine]:
    """Each table as a block placed where the table is on the page."""
    return [TextLine(t.to_markdown(), t.box, block=True) for t in tables]


def _overlaps(a: BBox, b: BBox) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def page_paths(page: pdfium.PdfPage) -> list[tuple[BBox, int]]:
    """Bounds and segment count of every top-level vector path on the page."""
    paths = []
    for obj in page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_PATH,), max_depth=1):
        paths.append((tuple(obj.get_bounds()), pdfium_c.FPDFPath_CountSegments(obj.raw)))
    return paths
