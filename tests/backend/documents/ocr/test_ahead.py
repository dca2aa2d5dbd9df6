"""Scanned pages OCR'd ahead of the parser (backend/documents/ocr/ahead.py), their display equations cut
out of the page image and marked (issue 29 item 2)."""

from __future__ import annotations

from backend.documents.pdf import parse_pdf
from backend.quality.formula_pages import FORMULAS, write_formula_pdf


def test_a_scanned_formula_is_kept_as_an_image_and_marked(tmp_path, settings):
    path = tmp_path / "scanned.pdf"
    write_formula_pdf(path, "en", "scanned", [FORMULAS[2]])
    [page] = parse_pdf(path, settings)
    [formula] = page.formulas
    assert formula.key == "p1_eq1" and 100 < formula.image.size[0] < 1200 and formula.image.size[1] < 300
    marked = next(p for p in page.text.split("\n\n") if p.startswith("[formula image p1_eq1, OCR: "))
    assert marked.endswith("] (1)"), marked
