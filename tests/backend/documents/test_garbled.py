"""Lines drawn in a font without a usable Unicode map (backend/documents/garbled.py), on real pages."""

from __future__ import annotations

import pypdfium2 as pdfium

from backend.documents.figures import render_region
from backend.documents.garbled import noise_fonts, read_garbled
from backend.documents.layout import CJK_CHAR, UNREADABLE, raw_lines
from backend.documents.ocr import get_ocr_engine
from backend.documents.page_lines import GARBLED_DPI
from backend.documents.pdf import parse_pdf
from tests.conftest import BENCH

PAPERS = BENCH / "arxiv-dev" / "docs"


def _paper(prefix: str):
    [paper] = PAPERS.glob(f"{prefix}*.pdf")
    return paper


def _lines(prefix: str, page: int):
    document = pdfium.PdfDocument(_paper(prefix))
    try:
        return raw_lines(document[page - 1].get_textpage())
    finally:
        document.close()


def test_a_chinese_font_without_a_unicode_map_is_read_by_ocr(settings):
    """LCSTS p4 (Figure 4): its examples' Chinese, KaiTi embedded without ToUnicode, reached the model as
    "Short Text: -C-=.DF'&$EBH+" and "Summarization: C3>?0-56!) -I29G"."""
    text = " ".join(parse_pdf(_paper("1506.05865v4"), settings)[3].text.split())
    assert "-C-=.DF" not in text and "C3>?0-56" not in text
    assert "水资源" in text and "红线" in text, text[:600]
    assert "Summarization:部分省超过" in text.replace("Summarization: ", "Summarization:")
    assert "Mingzhong Chen, the Chief Secretary of the Water Devision" in text  # its English is the text layer's


def test_without_ocr_the_noise_is_left_out_and_the_rest_of_the_line_kept():
    lines, read = read_garbled(_lines("1506.05865v4", 4), None, None)
    assert read == 0
    text = "\n".join(line.text for line in lines)
    assert "-C-=.DF" not in text and UNREADABLE not in text
    assert "Short Text:" in text and "Human Score: 5" in text


def test_unmapped_glyphs_that_read_as_text_are_no_noise():
    """A matplotlib plot's labels (DejaVuSans, 2305.16335 p8) and a figure's (MyriadPro, 1712.02820 p6) are
    unmapped too, but read right: they stay as they are."""
    for prefix, page in (("2305.16335v1", 8), ("1712.02820v1", 6)):
        lines = _lines(prefix, page)
        assert any(c.unmapped_font for line in lines for c in line.chars)
        assert not noise_fonts(lines)
        assert [line.text for line in read_garbled(lines, None, None)[0]] == [
            line.text.replace(UNREADABLE, "") for line in lines if line.text.replace(UNREADABLE, "").strip()
        ]


def test_ocr_reads_at_most_the_lines_it_is_allowed_and_leaves_the_rest_without_noise(settings):
    engine = get_ocr_engine(settings)
    document = pdfium.PdfDocument(_paper("1506.05865v4"))
    try:
        page = document[3]
        lines = raw_lines(page.get_textpage())
        out, read = read_garbled(lines, lambda box: render_region(page, box, GARBLED_DPI), engine.recognize, 2)
    finally:
        document.close()
    assert read == 2
    assert sum(1 for line in out if CJK_CHAR.search(line.text)) == 2  # the two read; the rest without noise
    assert not any("-C-=.DF" in line.text or UNREADABLE in line.text for line in out)
