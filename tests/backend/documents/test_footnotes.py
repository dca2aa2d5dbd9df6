"""Footnotes are read after the page's text (backend/documents/footnotes.py), on real papers' pages."""

from __future__ import annotations

import pypdfium2 as pdfium

from backend.documents.layout import read_lines
from backend.documents.pdf import parse_pdf
from tests.conftest import BENCH

PAPERS = BENCH / "arxiv-dev" / "docs"


def _paper(prefix: str):
    [paper] = PAPERS.glob(f"{prefix}*.pdf")
    return paper


def test_a_footnote_under_a_sentence_that_runs_on_is_read_after_the_page(settings):
    """2101.08595 p2: the left column ends mid-sentence over a footnote, and the sentence runs on at the top
    of the right column; read in place, the footnote cut it in two ("…obtained by the frequently" / "2 1A
    Batch (or stream) is defined…" / "occurred biterms in texts")."""
    text = parse_pdf(_paper("2101.08595v1"), settings)[1].text
    assert "cluster assignments obtained by the frequently occurred biterms in texts" in text
    assert text.rstrip().endswith("“Stream” are interchangeably used in our paper")


def test_a_page_of_references_in_small_type_keeps_its_order():
    """2203.01849 p5: two columns of references in small type, some entries numbered: no column's foot is
    taken for a footnote, so the left column is read whole before the right."""
    document = pdfium.PdfDocument(_paper("2203.01849v1"))
    try:
        text = "\n".join(line.text for line in read_lines(document[4].get_textpage()))
    finally:
        document.close()
    assert text.index("conference on world wide web, pages 373–374.") < text.index("Richard Socher, Eric H Huang")
    assert text.index("Lu Chen, Yanbin Zhao") < text.index("Richard Socher, Eric H Huang")


def test_a_footnote_read_after_a_page_that_runs_on_is_a_paragraph_of_its_own(settings):
    """2312.07556 p6 ends mid-word ("Simply averaging the final local mod-"), and its footnote, read after
    it, joined it: "mod- 3https://github.com/amazon-science/sccl"."""
    text = parse_pdf(_paper("2312.07556v1"), settings)[5].text
    assert text.split("\n\n")[-1] == "3https://github.com/amazon-science/sccl"
    assert "final local mod-" in text and "mod- 3https" not in text
