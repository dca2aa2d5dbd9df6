"""Page previews frame the cited passage: on native pages from the text layer, on scanned pages from OCR."""

from __future__ import annotations

import pypdfium2 as pdfium
import pytest
from PIL import Image

from backend.documents.pdf import parse_pdf
from backend.documents.preview import (
    FRAME_COLOUR,
    PREVIEW_SCALE,
    _find,
    _probes,
    passage_lines,
    render_page,
)
from backend.service import DocLens
from tests.conftest import BENCH, make_settings
from tests.support.text_pdf import write_scanned_pdf

FIRST = (
    "Harbour tides were measured every morning by the keeper of the northern lighthouse, who wrote "
    "each reading into a ledger bound in green leather."
)
CITED = (
    "Quarterly rainfall in the valley doubled after the new reservoir opened, and the farmers planted "
    "barley instead of wheat on the eastern terraces."
)
LAST = "Unrelated closing remarks about the weather station and its brass instruments stay unframed."


def framed_rows(path) -> list[int]:
    image = Image.open(path).convert("RGB")
    return sorted(
        {
            y
            for y in range(image.height)
            for x in range(0, image.width, 3)
            if max(abs(a - b) for a, b in zip(image.getpixel((x, y)), FRAME_COLOUR)) < 30
        }
    )


@pytest.mark.slow
def test_a_cited_passage_on_a_scanned_page_is_framed_where_its_text_is(tmp_path):
    pdf = write_scanned_pdf(tmp_path / "scan.pdf", [[FIRST, CITED, LAST]])
    with DocLens(make_settings(tmp_path / "data")) as service:
        service.create_kb("scans")
        result = service.ingest("scans", [pdf])[0]
        assert result.status == "indexed" and result.ocr_pages == 1
        source = service.search("scans", "rainfall reservoir barley terraces", top=1).sources[0]
        assert "reservoir" in source.text
        cited = service.page_image(
            "scans",
            "scan.pdf",
            1,
            "Quarterly rainfall in the valley doubled after "
            "the new reservoir opened, and the farmers planted barley instead of wheat "
            "on the eastern terraces.",
        )
        rows = framed_rows(cited)
        again = service.page_image("scans", "scan.pdf", 1, source.text)  # the indexed chunk itself
        assert framed_rows(again)
    # write_text_pdf: first line at 72 pt from the top, 18 pt per line, a paragraph gap of 12 pt; FIRST and
    # CITED wrap into two lines each at 90 characters, so CITED spans ~120..150 pt from the top.
    assert rows, "no frame on the scanned page"
    top, bottom = rows[0] / PREVIEW_SCALE, rows[-1] / PREVIEW_SCALE
    assert 105 <= top <= 125 and 140 <= bottom <= 165, (top, bottom)


def test_passage_lines_keep_lines_of_the_passage_and_skip_short_marks():
    lines = [
        ("Quarterly rainfall in the valley", (0, 0, 10, 10)),
        ("doub1ed after the new reservoir", (0, 20, 10, 30)),
        ("Something else entirely here", (0, 40, 10, 50)),
        ("3", (0, 60, 10, 70)),
    ]
    passage = "Quarterly rainfall in the valley doubled after the new reservoir opened. 3"
    assert passage_lines(lines, passage) == [(0, 0, 10, 10), (0, 20, 10, 30)]


def test_a_native_page_is_framed_without_ocr(tmp_path):
    from tests.support.text_pdf import write_text_pdf

    def no_ocr(image):
        raise AssertionError("a page with a text layer needs no OCR")

    pdf = write_text_pdf(tmp_path / "native.pdf", [[FIRST, CITED, LAST]], font_size=12.0)
    assert framed_rows(render_page(pdf, 1, CITED, tmp_path / "previews", no_ocr))


def test_a_passage_with_symbols_of_tex_math_fonts_is_found_in_the_pdfs_own_text(settings):
    """2201.05690 p1 draws ′ and ‖ in cmsy without a Unicode map: the stored text reads "M′ denotes the
    transpose of M, ‖M‖F denotes the Frobenius norm", the PDF's own text, which frames are searched in,
    "M0 … kMkF": those two clauses went unframed. Every piece of the passage is found now."""
    [paper] = (BENCH / "arxiv-dev" / "docs").glob("2201.05690v5*.pdf")
    passage = next(p for p in parse_pdf(paper, settings)[0].text.split("\n\n") if p.startswith("Notation:"))
    document = pdfium.PdfDocument(paper)
    try:
        textpage = document[0].get_textpage()
        missed = [probe for probe in _probes(passage) if not _find(textpage, probe)]
    finally:
        document.close()
    assert not missed and "transpose of M" in passage


def test_the_pieces_of_a_passage_end_at_an_operators_limits():
    """The stored text writes limits as LaTeX ("min_{f∈F}", layout._stack_text), which no PDF's own text
    holds: no piece searched for carries their braces."""
    probes = _probes("Thus, the loss min_{f∈F ′} ψ(‖AT x − f‖)P(dx) and ∑_{i=1}^{n} xi are equal")
    assert probes and not any(mark in probe for probe in probes for mark in "{}^_"), probes
    assert "Thus" in probes[0] and any("are equal" in probe for probe in probes)
