"""Chunking: sizes, overlap, page numbers, formulas and table rows kept whole."""

from __future__ import annotations

from backend.documents.chunking import chunk_pages
from backend.types import PageText

ZH = "这是一个用于测试的中文句子，内容没有实际意义。"
EN = "This sentence is written only to test the chunker. "


def test_small_document_is_one_chunk():
    chunks = chunk_pages([PageText(1, "第一段。\n\n第二段。")], size=400, overlap=80)
    assert len(chunks) == 1
    assert chunks[0].text == "第一段。\n\n第二段。"
    assert (chunks[0].page, chunks[0].page_end, chunks[0].chunk_index) == (1, 1, 0)


def test_sizes_overlap_and_sentence_boundaries():
    text = "\n\n".join(ZH * 3 for _ in range(8))
    chunks = chunk_pages([PageText(1, text)], size=200, overlap=60)
    assert len(chunks) > 3
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert len(chunk.text) <= 200
        assert chunk.text.endswith("。")  # cut at sentence ends
    for left, right in zip(chunks, chunks[1:]):
        assert right.text.split("\n\n")[0][:20] in left.text  # the next chunk repeats the end of this one


def test_english_overlap_and_spacing():
    chunks = chunk_pages([PageText(1, EN * 30)], size=300, overlap=80)
    assert len(chunks) > 4 and all(len(c.text) <= 300 for c in chunks)
    assert not any("chunker.This" in c.text for c in chunks)
    assert chunks[1].text[:40] in chunks[0].text


def test_pages_kept_and_page_breaks_respected():
    pages = [PageText(1, ZH * 6), PageText(2, ZH * 6), PageText(3, "短。")]
    chunks = chunk_pages(pages, size=200, overlap=40)
    assert chunks[0].page == 1
    assert all(c.page == c.page_end for c in chunks[:-1])  # each page's paragraphs end on that page
    assert {c.page for c in chunks} == {1, 2}
    last = chunks[-1]  # the tiny last page is not a chunk alone: it joins the previous one
    assert last.text.endswith("短。") and len(last.text) > 10 and (last.page, last.page_end) == (2, 3)


def test_paragraph_continuing_over_a_page_break():
    pages = [PageText(1, EN * 3 + "and the sentence goes on"), PageText(2, "to the next page. " + EN)]
    chunks = chunk_pages(pages, size=400, overlap=0)
    spanning = [c for c in chunks if c.page == 1 and c.page_end == 2]
    assert spanning and "goes on to the next page." in spanning[0].text


def test_math_block_never_split():
    formula = "$$\n" + " + ".join(f"x_{{{i}}}" for i in range(40)) + "\n$$"
    text = ZH * 5 + "\n\n" + formula + "\n\n" + ZH * 5
    chunks = chunk_pages([PageText(4, text)], size=150, overlap=30)
    holding = [c for c in chunks if "$$" in c.text]
    assert len(holding) == 1 and formula in holding[0].text and holding[0].page == 4


def test_table_whole_or_split_between_rows_with_header():
    header = "| 项目 | 2023 | 2024 |\n| --- | --- | --- |"
    rows = [f"| 指标{i} | {i * 10} | {i * 11} |" for i in range(30)]
    small = header + "\n" + "\n".join(rows[:3])
    chunks = chunk_pages([PageText(1, "表前文字。\n\n" + small + "\n\n表后文字。")], size=400, overlap=50)
    assert len(chunks) == 1 and small in chunks[0].text
    big = header + "\n" + "\n".join(rows)
    chunks = chunk_pages([PageText(1, big)], size=200, overlap=50)
    assert len(chunks) > 2
    seen = []
    for chunk in chunks:
        lines = chunk.text.split("\n")
        assert lines[:2] == header.split("\n")
        assert all(line in rows for line in lines[2:])  # whole rows only
        seen += lines[2:]
    assert seen == rows  # no row lost or repeated


def test_file_name_is_not_added():
    chunks = chunk_pages([PageText(1, ZH)], size=400, overlap=80)
    assert chunks[0].text == ZH


def test_short_tail_merged_into_previous_chunk():
    text = ZH * 8 + "完。"
    chunks = chunk_pages([PageText(1, text)], size=200, overlap=0)
    assert chunks[-1].text.endswith("完。") and len(chunks[-1].text) > 20


def test_overlong_sentence_is_cut():
    chunks = chunk_pages([PageText(1, "字" * 1000)], size=300, overlap=0)
    assert all(len(c.text) <= 300 for c in chunks) and "".join(c.text for c in chunks) == "字" * 1000


def test_a_footnote_ending_a_page_is_not_continued_by_the_next_page(settings):
    """1911.01196 p6 ends with its footnote "4https://dumps.wikimedia.org/…xml.bz2" (read after the page's
    text, no full stop): the next page's heading and paragraph were joined to it as if it ran on."""
    from backend.documents.pdf import parse_pdf
    from tests.conftest import BENCH

    [paper] = (BENCH / "arxiv-dev" / "docs").glob("1911.01196v1*.pdf")
    pages = [page.to_page_text() for page in parse_pdf(paper, settings)]
    chunks = chunk_pages(pages, settings.ingest.chunk_size, settings.ingest.chunk_overlap)
    [note] = [chunk for chunk in chunks if "4https://dumps.wikimedia.org" in chunk.text]
    assert note.page == note.page_end == 6 and "5.2 Document Clustering" not in note.text, note.text[-300:]
