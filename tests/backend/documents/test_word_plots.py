"""Plots drawn with words (issue 29 item 4): their words go with the figure, not into the body's chunks,
and a page of 20,000 of them is parsed in seconds (it took minutes)."""

from __future__ import annotations

import re
import time

from backend.documents.chunking import chunk_pages, with_figure_chunks
from backend.documents.pdf import parse_pdf
from backend.types import Figure
from tests.backend.documents.layout_fixtures import write_cell_table_pdf, write_word_plot_pdf

PAGE_SECONDS = 45.0  # a loaded 2-core machine took 6 s; before, over 15 minutes


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text))


def test_a_plot_drawn_with_words_is_one_figure_with_its_words_not_body_text(tmp_path, settings):
    path = tmp_path / "tsne.pdf"
    body, vocabulary = write_word_plot_pdf(path, 3000)
    [page] = parse_pdf(path, settings)
    for line in body:
        assert line in page.text
    assert not _words(page.text) & vocabulary  # no word of the plot in the body
    [figure] = page.figures
    assert figure.kind == "words" and figure.caption.startswith("Figure 3:")
    assert len(_words(figure.text) & vocabulary) > 200
    assert len(figure.text) <= settings.ingest.figure_text_chars

    record = Figure("d/p1_fig1", "d", "tsne.pdf", 1, "/x.png", figure.caption, figure.text)
    chunks = with_figure_chunks(chunk_pages([page.to_page_text()], 400, 80), [record])
    kinds = [c.kind for c in chunks]
    assert kinds.count("figure") == 1 and kinds[-1] == "figure"  # searchable once
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert not any(_words(c.text) & vocabulary for c in chunks if c.kind != "figure")


def test_a_page_of_twenty_thousand_words_costs_seconds(tmp_path, settings):
    path = tmp_path / "words.pdf"
    write_word_plot_pdf(path, 19_716)
    started = time.perf_counter()
    [page] = parse_pdf(path, settings)
    assert time.perf_counter() - started < PAGE_SECONDS
    assert len(page.text) < 2000 and [f.kind for f in page.figures] == ["words"]


def test_a_table_written_cell_by_cell_stays_body_text(tmp_path, settings):
    path = tmp_path / "cells.pdf"
    cells = write_cell_table_pdf(path)
    [page] = parse_pdf(path, settings)
    assert not page.figures
    assert sum(cell in page.text for cell in cells) >= 0.95 * len(cells)


def test_a_page_of_twenty_thousand_table_cells_is_ordered_in_seconds(tmp_path, settings):
    """Not a plot (the cells share baselines): the reading order itself must not be quadratic."""
    path = tmp_path / "cells.pdf"
    cells = write_cell_table_pdf(path, rows=560, columns=36, size=1.0)
    started = time.perf_counter()
    [page] = parse_pdf(path, settings)
    assert time.perf_counter() - started < PAGE_SECONDS
    assert not page.figures and sum(cell in page.text for cell in cells[:500]) >= 450
