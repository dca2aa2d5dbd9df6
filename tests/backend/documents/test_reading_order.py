"""Reading order from the page's geometry: columns, full-width blocks, figures, on native and OCR pages."""

from __future__ import annotations

from backend.documents.ocr import OCRBox, boxes_to_text
from backend.documents.pdf import parse_pdf
from backend.quality.bench_layout import LAYOUTS, normalise, write_bench_pdf
from tests.conftest import BENCH, SHARED
from tests.support.page_images import first_page

WORDS = (
    "graph cluster sample feature vector support model column reader order page figure table "
    "caption method result dataset measure signal energy matrix kernel"
).split()


def _paragraphs(count: int) -> list[str]:
    """Distinct sentences, so that any jump between columns shows in the text."""
    out = []
    for p in range(count):
        sentences = [
            f"Paragraph {p} sentence {s} is about the {WORDS[(p * 7 + s) % len(WORDS)]} and the "
            f"{WORDS[(p * 3 + s * 5) % len(WORDS)]} of item {p * 10 + s}."
            for s in range(5)
        ]
        out.append(" ".join(sentences))
    return out


def test_two_and_three_column_pages_read_column_by_column(tmp_path, settings):
    # full-width titles, an abstract, a figure as wide as the page between two bands of columns,
    # a figure with its caption inside a column
    path = tmp_path / "columns.pdf"
    truth = write_bench_pdf(path, _paragraphs(80), "en", LAYOUTS)
    pages = parse_pdf(path, settings)
    assert [p.columns for p in truth] == [2, 3, 2, 3]
    for expected, page in zip(truth, pages):
        assert normalise(page.text) == normalise(expected.truth), page.page


def test_latex_two_column_sample_reads_down_each_column(settings):
    # py-pdf sample-files 026: pdfium runs wrapped lines together and the old row sort interleaved columns
    page = parse_pdf(SHARED / "real" / "pypdf-samples" / "026-latex-multicolumn_multicolumn.pdf", settings)[0]
    text = normalise(page.text)
    assert text.startswith(
        "Two-Column Document with Lorem Ipsum Your Name January 3, 2024 Abstract This is a "
        "sample document with two columns filled with Lorem Ipsum text. Lorem ipsum dolor sit "
        "amet, consectetuer adipiscing elit. Ut purus elit, vestibulum ut, placerat ac,"
    )
    left_end = text.index("Pellentesque cursus luctus mauris.")
    assert left_end < text.index("Nulla malesuada porttitor diam.")


def arxiv_page_text(settings, paper: str, page: int) -> str:
    """Page ``page`` (from 1) of an arxiv-dev paper as parsed, normalised."""
    return normalise(parse_pdf(BENCH / "arxiv-dev" / "docs" / paper, settings)[page - 1].text)


def test_arxiv_two_column_page_is_not_read_across(settings):
    text = arxiv_page_text(
        settings, "1609.09000v1 - StruClus Structural Clustering of Large-Scale Graph Databases.pdf", 2
    )
    assert "feature vectors that contain one feature for each subgraph that is found" in text
    assert "binary entries encoding the presence of the associated substructure" in text


def test_the_arxiv_stamp_up_the_margin_is_read_after_the_page_and_joins_no_line(settings):
    """arXiv's "arXiv:<id> [cs.IR] <date>" is drawn turned up the left margin of every first page. Its glyphs
    started body lines ("2017 whether they are…", "ar paraphrases…") and its tall boxes joined pairs of
    lines out of order ("…good performancedetection, authorship…")."""
    paper = "1712.02820v1 - A Deep Network Model for Paraphrase Detection in Short Text Messages.pdf"
    text = arxiv_page_text(settings, paper, 1)
    assert "the objective is to detect whether they are semantically identical. An important insight" in text
    assert "they do not necessarily deliver good performance against noisy texts" in text
    assert "However, detecting paraphrases in user-generated noisy tweets" in text
    assert text.endswith("arXiv:1712.02820v1 [cs.IR] 7 Dec 2017") and text.count("arXiv:") == 1


def test_the_arxiv_stamp_sets_no_margin_so_paragraphs_stay_whole(settings):
    """The stamp up the left margin (x 18 of 595) stood for the column's left edge, so the right margin
    was taken as 577: every body line (ending at 530) "ended early" and became a paragraph of its own
    ("…similar sentences written" / "in natural language…"), in the chunks and what the model read."""
    paper = "1712.02820v1 - A Deep Network Model for Paraphrase Detection in Short Text Messages.pdf"
    text = parse_pdf(BENCH / "arxiv-dev" / "docs" / paper, settings)[0].text
    paragraphs = [" ".join(p.split()) for p in text.split("\n\n")]
    abstract = next(p for p in paragraphs if p.startswith("This paper is concerned with paraphrase detection."))
    assert abstract.endswith("and achieves highly competitive performance on a cleaner corpus."), paragraphs
    assert any(p.startswith("Twitter has for some time") and p.endswith("of linguistic variation.") for p in paragraphs)


def test_a_turned_label_is_never_read_as_a_display_formula(settings):
    """GeoTopo p9: a figure's label drawn turned ("U2=R\\N") is read after the page, and was then taken for a
    display formula there ("$$ 2U \\\\ = \\\\ R … $$")."""
    geotopo = SHARED / "real" / "pypdf-samples" / "009-pdflatex-geotopo_GeoTopo-komprimiert.pdf"
    text = parse_pdf(geotopo, settings)[8].text
    assert "$$ X=P^{n}(R) $$" in text, "the page's own display formulas stay"
    after_the_page = text.split("$$ X=P^{n}(R) $$", 1)[1]
    assert "$$" not in after_the_page and "R \\ N" in after_the_page, after_the_page


def test_ocr_boxes_of_two_columns_are_read_column_by_column():
    # image pixels, y down: a title across the page, two columns under it, a footnote across the page
    boxes = [OCRBox("A title across both columns of the scan", 100, 20, 900, 60)]
    for row in range(4):
        top = 100 + row * 40
        boxes.append(OCRBox(f"left column line {row} with enough words to fill it", 50, top, 480, top + 30))
        boxes.append(OCRBox(f"right column line {row} with enough words to fill it", 520, top, 950, top + 30))
    boxes.append(OCRBox("A footnote as wide as the page, under both columns of text", 50, 300, 950, 330))
    text = boxes_to_text(boxes)
    lines = [ln for ln in text.split("\n") if ln]
    assert lines == (
        ["A title across both columns of the scan"]
        + [f"left column line {r} with enough words to fill it" for r in range(4)]
        + [f"right column line {r} with enough words to fill it" for r in range(4)]
        + ["A footnote as wide as the page, under both columns of text"]
    )


def test_layout_regions_place_figure_labels_drop_headers_and_keep_equations_on_a_scan():
    from backend.documents.layout_model import Region

    def column_rows(top):
        out = []
        for row in range(3):
            y = top + row * 40
            out.append(OCRBox(f"left text {top} {row} long enough to be a column", 50, y, 480, y + 30))
            out.append(OCRBox(f"right text {top} {row} long enough to be a column", 520, y, 950, y + 30))
        return out

    boxes = (
        [OCRBox("Journal of Tests 2024", 50, 10, 400, 40)]
        + column_rows(100)
        + [
            OCRBox("axis", 60, 300, 120, 320),
            OCRBox("legend", 800, 300, 900, 320),
            OCRBox("E = m c2", 400, 420, 600, 450),
            OCRBox("(1)", 900, 420, 950, 450),
        ]
        + column_rows(500)
    )
    regions = [
        Region("header", (40, 5, 410, 45), 0.9),
        Region("figure", (50, 280, 950, 400), 0.9),
        Region("equation", (380, 410, 960, 460), 0.8),
    ]
    paragraphs = [p.replace("\n", " ") for p in boxes_to_text(boxes, regions, 1400).split("\n\n")]
    assert "Journal of Tests" not in " ".join(paragraphs)
    assert paragraphs.index("axis legend") > paragraphs.index(
        "right text 100 0 long enough to be a column right text 100 1 long enough to be a column "
        "right text 100 2 long enough to be a column"
    )
    assert "E = m c2 (1)" in paragraphs
    assert paragraphs[-1].startswith("right text 500 0")


def test_layout_model_finds_the_wide_figure_on_a_scanned_page(tmp_path):
    from backend.documents.layout_model import layout_model

    path = tmp_path / "columns.pdf"
    write_bench_pdf(path, _paragraphs(30), "en", LAYOUTS[:1])
    image = first_page(path)
    figures = [r.box for r in layout_model().regions(image) if r.label == "figure"]
    width = image.width
    assert any(b[2] - b[0] > 0.7 * width for b in figures), figures  # the chart as wide as the page


def _page_lines(path, index: int = 0):
    import pypdfium2 as pdfium

    from backend.documents.figures import image_boxes
    from backend.documents.layout import raw_lines
    from backend.documents.pdf import _obstacles

    pdf = pdfium.PdfDocument(str(path))
    try:
        page = pdf[index]
        textpage = page.get_textpage()
        lines, obstacles = raw_lines(textpage), _obstacles(page, image_boxes(page))
        textpage.close()
        return lines, obstacles
    finally:
        pdf.close()


def test_column_test_unsure_where_a_refused_gutter_parts_side_by_side_text(tmp_path):
    """Unsure, measurably: a strip between side-by-side text (four facing rows, lines over 3 ems on both
    sides) that the XY-cut refused. Columns 3 pt apart (the cut wants 0.4 font sizes) are unsure and read
    across; 18 pt apart they are cut and sure; a single column is sure."""
    from backend.documents.reading_order import column_test_unsure

    tight, normal = tmp_path / "tight.pdf", tmp_path / "normal.pdf"
    write_bench_pdf(tight, _paragraphs(20), "en", ((2, False, False, False),), gap=3.0)
    write_bench_pdf(normal, _paragraphs(20), "en", ((2, False, False, False),))
    assert column_test_unsure(*_page_lines(tight))
    assert not column_test_unsure(*_page_lines(normal))
    single = tmp_path / "single.pdf"
    write_bench_pdf(single, _paragraphs(20), "en", ((1, False, False, False),))
    assert not column_test_unsure(*_page_lines(single))


def test_layout_model_joins_in_on_a_native_page_with_a_drawn_chart(tmp_path, settings):
    """A chart drawn with vector paths holds text lines (its tick labels): geometry alone does not know the
    chart is there, so the layout model runs on that page; its figure region makes the labels one block
    where the chart is, and the columns around it still read in order."""
    from backend.settings import with_changes
    from tests.backend.documents.layout_fixtures import write_drawn_chart_pdf

    path = tmp_path / "chart.pdf"
    truth = write_drawn_chart_pdf(path, _paragraphs(12))
    geometry = parse_pdf(path, with_changes(settings, {"ingest": {"layout_model_native": False}}))[0].text
    with_model = parse_pdf(path, settings)[0].text
    labels = "100 75 50 25 0 0 10 20 30 40 50 60 70 80 90 100"
    assert labels not in geometry.split("\n\n")  # geometry: each label row a paragraph of its own
    assert labels in with_model.split("\n\n")
    assert normalise(with_model.replace(labels, "")) == normalise(truth)


def test_two_columns_between_display_formulas_read_column_by_column(settings):
    """1904.07695 p5: each column holds display formulas drawn in many short pieces (a product's limits,
    subscripts, equation numbers), so the median line of each side was short and the gutter was refused as
    no column; both columns then read as one, row by row ("…LF-DMM uses the fol- sampling process for word
    w in document d is as follows: lowing conditional…")."""
    text = arxiv_page_text(
        settings, "1904.07695v1 - Short Text Topic Modeling Techniques, Applications, and Performance A Survey.pdf", 5
    )
    assert "LF-DMM uses the following conditional probability distribution to infer the topic of the document d" in text
    assert "process for word w in document d is as follows" in text and "fol- sampling" not in text


def test_two_columns_right_under_a_figure_as_wide_as_the_page_read_column_by_column(settings):
    """2312.07556 p3: a drawn figure across both columns, its caption right above them with no whitespace
    between; the figure's labels stand beside each other across the gutter, so the gutter was refused for
    the whole page and the columns read as one, row by row ("…still limited. The where reason is…")."""
    text = arxiv_page_text(settings, "2312.07556v1 - Federated Learning for Short Text Clustering.pdf", 3)
    assert "their clustering performance is still limited. The reason is that lacking supervision" in text
    assert "We turn this objective into a discrete optimal transport problem [Cuturi, 2013]" in text


def test_a_left_columns_foot_is_read_before_the_right_column(settings):
    """2101.08595 p2: the running head crosses the gutter, its parts beside each other, right above the
    columns: the gutter was refused for the page, and the right column was read before the foot of the
    left one (section 2.2 after the right column)."""
    text = arxiv_page_text(
        settings,
        "2101.08595v1 - Fast Clustering of Short Text Streams Using Efficient Cluster Indexing and Dynam.pdf",
        2,
    )
    assert text.index("2.2 Model-based Stream Clustering") < text.index("using the populated clustering model")
