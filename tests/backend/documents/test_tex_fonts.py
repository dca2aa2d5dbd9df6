"""TeX's math fonts without a Unicode map (backend/documents/tex_fonts.py), read from real papers' pages."""

from __future__ import annotations

import pypdfium2 as pdfium
import pytest

from backend.documents.layout import read_lines
from backend.documents.pdf import parse_pdf
from backend.documents.tex_fonts import NEGATION, shown_char
from tests.conftest import BENCH, SHARED

PAPERS = BENCH / "arxiv-dev" / "docs"
GEOTOPO = SHARED / "real" / "pypdf-samples" / "009-pdflatex-geotopo_GeoTopo-komprimiert.pdf"


def _page_text(path, page: int) -> str:
    """Page ``page`` (from 1) as its lines read, joined by spaces, white space made single."""
    document = pdfium.PdfDocument(path)
    try:
        textpage = document[page - 1].get_textpage()
        return " ".join(" ".join(line.text.split()) for line in read_lines(textpage))
    finally:
        document.close()


def _paper(prefix: str):
    [paper] = PAPERS.glob(f"{prefix}*.pdf")
    return paper


def test_the_norm_bars_of_cmsy_read_as_norms_not_as_the_letter_k():
    """1301.0676 p2: "min kxi − Afjk2" was what the model read for min ‖xᵢ − Afⱼ‖²."""
    text = _page_text(_paper("1301.0676v5"), 2)
    assert "‖xi − Afj‖2" in text, text
    assert "kxi" not in text


def test_a_prime_of_cmsy_reads_as_a_prime_not_as_zero():
    """2201.05690 p1: "M0 denotes the transpose of M"."""
    text = _page_text(_paper("2201.05690v5"), 1)
    assert "M′ denotes the transpose of M, ‖M‖F denotes the Frobenius norm" in text, text


def test_angle_brackets_and_braces_of_cmsy_are_kept():
    """2109.13329 p2: the ideal ⟨α⟩ read "hαi", and the set {p1, …, pk} lost its braces."""
    text = _page_text(_paper("2109.13329v1"), 2)
    assert "challenge b = ⟨α⟩ is" in text, text
    assert "{p1, . . . , pk}" in text


@pytest.mark.parametrize(
    ("page", "shown"),
    [
        (12, "für je zwei Punkte x ≠ y in X"),  # the slash drawn after the "=" it crosses: "x =6 y" before
        (16, "mit ∅ ≠ U1, U2"),  # drawn before it, as \not= does: "∅ 6= U1"
    ],
)
def test_the_negation_slash_crosses_the_symbol_it_is_drawn_on(page, shown):
    text = _page_text(GEOTOPO, page)
    assert shown in text, text


def test_a_wide_tilde_on_a_row_of_its_own_is_no_formula(settings):
    """0803.1139 p2: cmex's wide tildes over Ã stood as "e" lines, then as "$$ ˜ $$" paragraphs, and
    broke the sentence around them in three."""
    text = parse_pdf(_paper("0803.1139v1"), settings)[1].text
    assert "˜ $$" not in text
    assert "For any x˜ ∈ A and y˜ ∈ p−1(f(p(x˜))) there is a map f such that the diagram" in " ".join(text.split())


def test_only_unmapped_glyphs_of_tex_math_fonts_are_read_through_the_tables():
    assert shown_char("ABCDEF+CMSY10", ord("k")) == "‖"
    assert shown_char("CMSY7", ord("0")) == "′"
    assert shown_char("CMSY10", ord("6")) == NEGATION
    assert shown_char("CMSY10", ord("P")) == "P"  # a calligraphic capital is its letter
    assert shown_char("CMEX10", ord("e")) == "˜"
    assert shown_char("CMEX10", 0x0C) == ""  # a piece of a tall bar
    assert shown_char("CMMI10", 0x0F) == "ϵ"
    assert shown_char("DejaVuSans", ord("0")) is None  # a plot's digits, unmapped but right


def test_ams_and_stmaryrd_symbols_read_as_they_show():
    """2109.13329 p4 wrote the integer interval ⟦i, j⟧ as "Ji, jK"; GeoTopo p107 the angle ∡ABC as "]ABC"."""
    assert "let ⟦i, j⟧ denote the set" in _page_text(_paper("2109.13329v1"), 4)
    assert "Es gilt ∡ABC′ < ∡ABC" in _page_text(GEOTOPO, 107)


def test_tall_delimiters_read_as_one_delimiter_not_as_their_pieces(settings):
    """pdfTeX maps a tall parenthesis' pieces to Adobe's private use (U+F8EB top, U+F8EC extension …):
    2109.13329 p13's matrices read as runs of U+F8EC, and 1203.2923 p4's δ( lost its parenthesis."""
    pages = parse_pdf(_paper("2109.13329v1"), settings)
    assert not any(0xF8E5 <= ord(ch) <= 0xF8FE for page in pages for ch in page.text)
    assert "\\delta(m_{J}^{2}" in parse_pdf(_paper("1203.2923v2"), settings)[3].text
