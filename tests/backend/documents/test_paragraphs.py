"""Paragraphs of a page's ordered lines (backend/documents/paragraphs.py)."""

from __future__ import annotations

from backend.documents.layout import TextLine
from backend.documents.paragraphs import lines_to_text
from backend.documents.pdf import parse_pdf
from tests.conftest import BENCH

PITCH = 12.0


def _lines(rows: list[tuple[str, float, float]], size: float = 10.0) -> list[TextLine]:
    """(text, x0, x1) per line, top to bottom, one line pitch apart."""
    return [
        TextLine(text, (x0, 700 - i * PITCH, x1, 700 - i * PITCH + size), size) for i, (text, x0, x1) in enumerate(rows)
    ]


def test_an_abstract_narrower_than_the_body_reads_as_one_paragraph(settings):
    """1301.0676's abstract (x 168-443) sits inside a body 134-477 wide: measured against the body's right
    edge each of its lines "ended early", so it became a paragraph per line ("…The advantage of this method
    is" / "that the partition of objects…")."""
    [paper] = (BENCH / "arxiv-dev" / "docs").glob("1301.0676v5*.pdf")
    paragraphs = [" ".join(p.split()) for p in parse_pdf(paper, settings)[0].text.split("\n\n")]
    abstract = next(p for p in paragraphs if p.startswith("Abstract: Factorial k-means (FKM) clustering"))
    assert abstract.endswith("The result is proved for a more general model including FKM clustering."), paragraphs


def test_a_justified_block_inside_the_body_joins_its_wrapped_lines():
    body = [("Body text that runs the full width of the column and wraps", 72, 540)] * 2
    quote = [
        ("A quotation set in from both sides, its lines justified to", 110, 500),
        ("its own right edge, which stops well short of the body's", 110, 500.5),
        ("edge, and its last line ends early.", 110, 300),
    ]
    text = lines_to_text(_lines([*body, *quote, *body]), 612)
    assert "justified to its own right edge, which stops well short of the body's edge, and its last" in text
    assert "ends early.\n\nBody text" in text


def test_an_indented_ragged_block_keeps_its_lines_apart():
    """Code and lists set in from the left end where they end: they are not wrapped text."""
    body = [("Body text that runs the full width of the column and wraps", 72, 540)] * 2
    code = [("for line in lines:", 110, 210), ("    if line.block:", 110, 230), ("        continue", 110, 200)]
    text = lines_to_text(_lines([*body, *code]), 612)
    assert "for line in lines:\n\n    if line.block:\n\n        continue" in text


def test_references_in_the_left_column_alone_keep_each_entry_whole(settings):
    """1904.07695's last page holds its references in the left column only (x 49-300 of 612): the right
    margin was taken as 563 (as wide as the left one), so every line "ended early", and each entry's
    continuation, set in under its number, began a paragraph of its own."""
    [paper] = (BENCH / "arxiv-dev" / "docs").glob("1904.07695v1*.pdf")
    paragraphs = [" ".join(p.split()) for p in parse_pdf(paper, settings)[16].text.split("\n\n")]
    ramage = (
        "[43] D. Ramage, S. Dumais, D. Liebling, Characterizing microblogs with topic models, in: Fourth "
        "International AAAI Conference on Weblogs and Social Media, 2010."
    )
    assert ramage in paragraphs, paragraphs[:6]
    assert (
        "[44] I. Guy, Social recommender systems, in: Recommender systems handbook, Springer, 2015, pp. 511–543."
        in paragraphs
    )


def test_a_list_with_hanging_indents_reads_an_item_per_paragraph():
    rows = [
        ("[1] A. Author, A title that runs on to the right edge of the", 72, 540),
        ("column, in: Proceedings of a conference, 2020.", 90, 300),
        ("[2] B. Author, Another title that also runs to the right edge", 72, 540),
        ("of the column and then on, so that it fills a second line to", 90, 540),
        ("the end, in: A journal 3 (1) 2021.", 90, 260),
        ("[CDW17] R. Cramer, L. Ducas: Short Stickelberger class relations and", 72, 540),
        ("application to Ideal-SVP. In EUROCRYPT (1), 2017.", 90, 330),
        ("• A point made in one line that reaches the right edge of the", 72, 540),
        ("column and then carries on, set in under its bullet.", 90, 330),
    ]
    paragraphs = lines_to_text(_lines(rows), 612).split("\n\n")
    assert [p[:3] for p in paragraphs] == ["[1]", "[2]", "[CD", "• A"], paragraphs
    assert paragraphs[1].endswith("so that it fills a second line to the end, in: A journal 3 (1) 2021.")


def test_a_page_of_short_sentences_keeps_them_apart():
    """Lines that never reach the right margin ended on purpose, however the longest one ends."""
    rows = [("Bring the form.", 72, 150), ("Sign it on page two before you come.", 72, 260), ("Arrive early.", 72, 140)]
    assert lines_to_text(_lines(rows), 612).count("\n\n") == 2
