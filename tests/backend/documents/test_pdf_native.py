"""Native PDFs: text against ground truth, running lines removed, tables as Markdown, figures with captions."""

from __future__ import annotations

import json
import re

import pytest

from backend.documents.figures import save_figure
from backend.documents.pdf import PAGE_NUMBER, ParsedPage, parse_pdf
from tests.conftest import BENCH, SAMPLES, make_settings
from tests.support.text_pdf import write_text_pdf

LAYOUT = SAMPLES / "layout"
GROUND_TRUTH = json.loads((LAYOUT / "native_zh_en_20p.gt.json").read_text(encoding="utf-8"))
TABLE_PAGES = {3, 8, 13, 18}
FIGURE_PAGES = {5: "image", 10: "image", 15: "vector", 20: "image"}


def squash(text: str) -> str:
    """Compare without whitespace: OCR and line joining may add or drop spaces."""
    return re.sub(r"\s+", "", text)


def body_lines(page: int) -> list[str]:
    return [ln for ln in GROUND_TRUTH[str(page)]["lines"] if not PAGE_NUMBER.match(ln.strip())]


@pytest.fixture(scope="module")
def settings(tmp_path_factory):
    return make_settings(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def native(settings) -> list[ParsedPage]:
    return parse_pdf(LAYOUT / "native_zh_en_20p.pdf", settings)


@pytest.fixture(scope="module")
def opentype(settings) -> list[ParsedPage]:
    return parse_pdf(LAYOUT / "native_fpdf2_20p.pdf", settings)


def found_share(pages: list[ParsedPage]) -> float:
    found = total = 0
    for page in pages:
        text = squash(page.text)
        for line in body_lines(page.page):
            total += 1
            found += squash(line) in text
    return found / total


def test_native_text_matches_ground_truth(native):
    assert [p.page for p in native] == list(range(1, 21))
    assert not any(p.ocr for p in native)
    assert found_share(native) >= 0.95


def test_page_numbers_are_removed(native):
    for page in native:
        lines = [ln.strip() for ln in page.text.split("\n") if ln.strip()]
        assert f"- {page.page} -" not in lines
        assert not PAGE_NUMBER.match(lines[-1]), page.page  # (chart axis labels elsewhere may be bare numbers)


def test_paragraphs_are_separated_by_blank_lines(native):
    first = native[0].text.split("\n\n")
    assert first[0] == "第1章 引言 Introduction"
    assert "模型在16张显卡上训练了2个周期，学习率设为千分之一。" in first


def test_tables_are_markdown_and_not_repeated(native):
    assert {p.page for p in native if p.tables} == TABLE_PAGES
    for page in native:
        if page.page not in TABLE_PAGES:
            continue
        rows = GROUND_TRUTH[str(page.page)]["table"]
        table_lines = [ln for ln in page.text.split("\n") if ln.startswith("|")]
        assert table_lines[0] == "| " + " | ".join(rows[0]) + " |"
        assert re.fullmatch(r"\|( --- \|)+", table_lines[1])
        assert table_lines[2:] == ["| " + " | ".join(r) + " |" for r in rows[1:]]
        body = "\n".join(ln for ln in page.text.split("\n") if not ln.startswith("|"))
        for row in rows[1:]:
            assert row[0] not in body  # the cell text lives only in the table
        # the table sits where it is on the page: after the text above it, before its caption
        caption = next(ln for ln in GROUND_TRUTH[str(page.page)]["lines"] if re.match(r"表\d", ln))
        assert page.text.index(table_lines[0]) < page.text.index(caption)


def test_figures_with_captions(native, tmp_path):
    found = {p.page: p.figures for p in native if p.figures}
    assert set(found) == set(FIGURE_PAGES)
    for page, figures in found.items():
        assert len(figures) == 1
        figure = figures[0]
        assert figure.kind == FIGURE_PAGES[page]
        assert re.match(r"图\d+：2020-2024年营业收入变化趋势 Figure \d+: revenue trend", figure.caption)
        assert figure.image.width > 300 and figure.image.height > 150
        path = save_figure(figure, tmp_path)
        assert path.name == f"p{page}_fig1.png" and path.read_bytes().startswith(b"\x89PNG")


def test_vector_chart_region_covers_the_bars(native):
    chart = native[14].figures[0]
    x0, y0, x1, y1 = chart.box
    assert x0 < 110 and x1 > 480 and y0 < 270 and y1 > 460  # bars, axis labels and title


def test_opentype_fonts_give_the_same_text(native, opentype):
    assert not any(p.ocr for p in opentype)
    assert found_share(opentype) >= 0.95
    assert {p.page for p in opentype if p.tables} == TABLE_PAGES
    for a, b in zip(native, opentype):
        assert squash(a.text) == squash(b.text) or a.page == 15  # page 15's chart labels are not in fpdf2's copy


def test_bench_running_header_removed_and_lines_joined(settings):
    pages = parse_pdf(BENCH / "dev-zh" / "docs" / "zh_000.pdf", settings)
    first = pages[0].text.split("\n\n")
    assert first[0] == "泡泡战士"  # the article title stays, the running header above it goes
    assert first.count("泡泡战士") == 1
    assert "中国大陆由盛大游戏运营" in pages[0].text  # a line wrapped inside a word joins without a space
    assert not re.search(r"^- ?\d+ ?-$", pages[1].text, re.MULTILINE)
    english = parse_pdf(BENCH / "dev-en" / "docs" / "en_000.pdf", settings)
    assert "the champion of the National Football League" in english[0].text


@pytest.mark.parametrize(
    "name, figure_pages",
    [("商业分析示例文档.pdf", [2]), ("物理公式示例文档.pdf", [2]), ("计算机科学示例文档.pdf", [1])],
)
def test_sample_figures_on_the_right_pages(settings, name, figure_pages):
    pages = parse_pdf(SAMPLES / name, settings)
    assert [p.page for p in pages if p.figures] == figure_pages
    for page in pages:
        for figure in page.figures:
            assert figure.image.width >= settings.ingest.min_figure_px
    assert sum(p.tables for p in pages) >= (0 if name.startswith("计算机") else 1)


def test_sample_table_rows_are_markdown(settings):
    pages = parse_pdf(SAMPLES / "商业分析示例文档.pdf", settings)
    assert "| 北美 (NA) | 120.5 | 135.2 | 148.0 | +9.5% |" in pages[0].text
    assert (
        pages[0].text.index("区域销售业绩表") < pages[0].text.index("| 北美 (NA)") < pages[0].text.index("市场份额趋势")
    )


def test_a_title_line_naming_a_figure_is_its_caption_when_no_figure_number_exists(settings):
    pages = parse_pdf(SAMPLES / "物理公式示例文档.pdf", settings)
    [figure] = [f for p in pages for f in p.figures]
    assert figure.caption == "4. 波函数示意图"


def test_a_page_of_one_line_at_the_top_keeps_it_though_every_page_starts_alike(settings, tmp_path):
    # each page's only line sits in the header zone and repeats (digits aside): it is what the page says
    log = [[f"Page {n} of the harbour log: the ferry left at noon."] for n in (1, 2, 3, 4)]
    path = write_text_pdf(tmp_path / "log.pdf", log, top=40)
    pages = parse_pdf(path, settings)
    assert [p.text for p in pages] == [f"Page {n} of the harbour log: the ferry left at noon." for n in (1, 2, 3, 4)]


def test_a_running_header_still_goes_when_the_page_says_more(settings, tmp_path):
    pages_text = [
        ["Harbour log", "", f"The ferry left at noon on day {n} and came back at dusk."] for n in (1, 2, 3, 4)
    ]
    pages = parse_pdf(write_text_pdf(tmp_path / "log.pdf", pages_text, top=40), settings)
    assert all("Harbour log" not in p.text and "ferry left" in p.text for p in pages)
