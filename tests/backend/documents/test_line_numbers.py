"""Line numbers in a page's margin (backend/documents/line_numbers.py) are no part of the text."""

from __future__ import annotations

import re

import pypdfium2 as pdfium
import pytest

from backend.documents.layout import read_lines
from backend.documents.pdf import parse_pdf
from tests.backend.documents.layout_fixtures import write_numbered_lines_pdf
from tests.conftest import BENCH

STEPS = [f"{i}: update the cluster centre with the weights w{i};" for i in range(1, 9)]
WORDS = [f"{a}{b}" for a in "abcde" for b in "xyz"]  # names for the lines, so no line holds a number


def _text(path) -> str:
    document = pdfium.PdfDocument(path)
    try:
        return " ".join(line.text for line in read_lines(document[0].get_textpage()))
    finally:
        document.close()


def test_a_review_copys_line_numbers_are_taken_out_of_its_text(settings):
    """2312.07556 (arxiv-dev) numbers every line in the margin: "267 We show …" began a left column's line,
    the right column's ended in theirs, and paragraphs joined them mid-sentence ("can be help- 272 ful")."""
    [paper] = (BENCH / "arxiv-dev" / "docs").glob("2312.07556v1*.pdf")
    page = parse_pdf(paper, settings)[3].text
    assert "pseudo-labels can be helpful to learn more discriminative representations" in page, page[:3000]
    assert not re.search(r"\b2[6-9]\d\b", page)  # the page's line numbers run from 267 to 320


@pytest.mark.parametrize("every", [1, 5])
def test_numbers_in_both_margins_go_and_numbered_steps_stay(tmp_path, every):
    """Every line, or every fifth, numbered in small type beside two columns; an algorithm's own numbered
    steps, in the body's type, are text."""
    left = [f"left column line {word} of the review copy" for word in WORDS + WORDS]
    path = write_numbered_lines_pdf(tmp_path / "review.pdf", left, STEPS + left, every=every)
    text = _text(path)
    assert not any(token.isdigit() for token in text.split()), text
    assert all(step in text for step in STEPS), text


def test_a_column_of_numbers_in_the_bodys_type_is_kept(tmp_path):
    """A list counted in the margin in the body's own size is the text's, not the page's line numbers."""
    lines = [f"{i}  entry number {i} of the register" for i in range(1, 12)]
    path = write_numbered_lines_pdf(tmp_path / "list.pdf", lines, [], every=100)
    assert all(line.split()[0] in _text(path).split() for line in lines)
