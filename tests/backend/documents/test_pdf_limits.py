"""What one PDF may cost (issue 11 items 8 and 13): named errors before the expensive step, and the
pages of a damaged file that can be read are read. Real files from tests/backend/documents/hostile_pdfs.py."""

from __future__ import annotations

import logging

import pytest

from backend.documents.limits import MIN_RENDER_DPI, render_dpi
from backend.documents.pdf import inspect_pdf, parse_pdf
from backend.errors import DocumentError
from backend.quality import hostile_pdfs
from backend.settings import IngestSettings
from tests.conftest import make_settings


def test_a_page_over_max_page_mm_is_refused_before_it_is_rendered(tmp_path, settings):
    path = hostile_pdfs.huge_page(tmp_path / "poster.pdf")
    assert path.stat().st_size < 20_000
    with pytest.raises(DocumentError) as caught:
        inspect_pdf(path, settings)
    assert str(caught.value) == "poster.pdf: page 1 is 5.1 m wide: larger than ingest.max_page_mm (1200 mm)"
    a0 = hostile_pdfs.huge_page(tmp_path / "a0.pdf", 1189 / 25.4 * 72)
    assert inspect_pdf(a0, settings) == 1
    small = make_settings(tmp_path, DOCLENS_INGEST_MAX_PAGE_MM="800")
    with pytest.raises(DocumentError, match=r"a0.pdf: page 1 is 1.2 m wide: larger than ingest.max_page_mm \(800 mm\)"):
        inspect_pdf(a0, small)


def test_render_resolution_is_lowered_to_max_render_mpx_and_refused_below_72_dpi():
    limits = IngestSettings(max_render_mpx=40)
    a4 = (595.0, 842.0)
    assert render_dpi(*a4, 200, limits, "a4") == 200  # 3.9 megapixels
    a0 = (2384.0, 3370.0)
    lowered = render_dpi(*a0, 200, limits, "a0")
    assert MIN_RENDER_DPI <= lowered < 200
    assert (a0[0] * lowered / 72) * (a0[1] * lowered / 72) <= 40e6 * 1.001
    with pytest.raises(
        DocumentError,
        match=r"^x.pdf: page 1 needs 8 megapixels at 72 dpi: more than "
        r"ingest.max_render_mpx \(5\)$",
    ):
        render_dpi(*a0, 200, IngestSettings(max_render_mpx=5), "x.pdf: page 1")


def test_one_content_stream_showing_too_many_characters_is_refused_unread(tmp_path, settings):
    for compress in (True, False):
        path = hostile_pdfs.long_line(tmp_path / "line.pdf", 400_000, compress=compress)
        with pytest.raises(DocumentError) as caught:
            inspect_pdf(path, settings)
        assert str(caught.value) == (
            "line.pdf: one content stream shows more than 200,000 characters: "
            "more than ingest.max_page_chars allows on a page"
        )


def test_a_page_with_too_many_characters_over_several_streams_is_refused(tmp_path, settings):
    path = hostile_pdfs.long_line(tmp_path / "split.pdf", 300_000, streams=3)  # 100,000 per stream
    assert inspect_pdf(path, settings) == 1
    with pytest.raises(
        DocumentError,
        match=r"^split.pdf: page 1 has 2\d\d,\d{3} characters: "
        r"more than ingest.max_page_chars \(200,000\)$",
    ):
        parse_pdf(path, settings)


def test_a_compression_bomb_is_refused_while_unpacking(tmp_path):
    path = hostile_pdfs.compression_bomb(tmp_path / "bomb.pdf", 64)
    assert path.stat().st_size < 200_000
    with pytest.raises(
        DocumentError,
        match=r"^bomb.pdf: a compressed stream \(at byte [\d,]+\) unpacks to more "
        r"than 16 MB: larger than ingest.max_stream_mb$",
    ):
        inspect_pdf(path, make_settings(tmp_path, DOCLENS_INGEST_MAX_STREAM_MB="16"))
    text = " ".join(p.text for p in parse_pdf(path, make_settings(tmp_path, DOCLENS_INGEST_MAX_STREAM_MB="100")))
    assert "basalt granite" in text  # under the limit the text is read


def test_a_page_tree_cycle_reads_the_good_pages_and_names_the_bad_one(tmp_path, settings):
    path = hostile_pdfs.page_cycle(tmp_path / "cycle.pdf")
    assert inspect_pdf(path, settings) == 3
    pages = parse_pdf(path, settings)
    assert [(p.page, p.unreadable) for p in pages] == [(1, False), (2, False), (3, True)]
    assert all("Line 9: basalt" in p.text for p in pages[:2]) and pages[2].text == ""


def test_bytes_after_the_end_marker_do_not_make_a_pdf_corrupt(tmp_path, settings):
    path = hostile_pdfs.trailing_junk(tmp_path / "mailed.pdf", 50_000)
    assert inspect_pdf(path, settings) == 1
    assert "Line 29: basalt" in parse_pdf(path, settings)[0].text


def test_a_string_cut_by_pdfium_is_named_on_its_page(tmp_path, settings):
    path, last_word = hostile_pdfs.long_text_object(tmp_path / "cut.pdf")
    page = parse_pdf(path, settings)[0]
    assert page.cut_objects == 1 and last_word.decode() not in page.text
    normal = parse_pdf(hostile_pdfs.long_line(tmp_path / "fine.pdf", 60_000), settings)[0]
    assert normal.cut_objects == 0 and len(normal.text) > 50_000  # strings of 30,000: nothing cut


def test_a_large_scan_is_rendered_within_max_render_mpx(tmp_path, caplog):
    path = hostile_pdfs.scanned_poster(tmp_path / "poster.pdf", 600)  # 12.5 megapixels at 150 dpi
    settings = make_settings(tmp_path, DOCLENS_INGEST_MAX_RENDER_MPX="4")
    with caplog.at_level(logging.INFO, logger="backend.documents.limits"):
        pages = parse_pdf(path, settings)
    assert len(pages) == 1 and pages[0].ocr
    lowered = [r.getMessage() for r in caplog.records if "ingest.max_render_mpx" in r.getMessage()]
    assert lowered and all(m.startswith("poster.pdf: page 1 rendered at 85 dpi instead of 150") for m in lowered)
