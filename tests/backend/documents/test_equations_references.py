"""Display equations stay whole in one chunk; the bibliography's chunks are marked as references."""

from __future__ import annotations

import re

from backend.documents.chunking import chunk_pages
from backend.documents.pdf import parse_pdf
from tests.backend.documents.layout_fixtures import DEJAVU_MONO, write_placed_lines_pdf

BODY = [
    "The objective adds a penalty to the distance of each sample",
    "to its centre, and the penalty keeps the model parameters",
    "small. The bound below follows from the triangle equality.",
]


def test_display_equation_is_one_unit_in_one_chunk(tmp_path, settings):
    lines = (
        [(40, t, 9) for t in BODY]
        + [(-1, "E(θ) = ∑ ‖x − μ‖² + λ · R(θ)", 9), (-1, "≤ ∑ ‖x‖² + λ · ‖θ‖². (3)", 9)]
        + [(40, t, 9) for t in BODY * 3]
    )
    path = write_placed_lines_pdf(tmp_path / "equation.pdf", [lines], DEJAVU_MONO, width=400)
    pages = [p.to_page_text() for p in parse_pdf(path, settings)]
    paragraphs = pages[0].text.split("\n\n")
    assert paragraphs[1].startswith(r"$$ E(\theta)=\sum\|x-\mu\|^{2}+\lambda\cdot R(\theta) \\ ")
    assert paragraphs[1].endswith("(3) $$")  # two rows of one formula, in one paragraph
    chunks = chunk_pages(pages, size=120, overlap=30)
    holding = [c for c in chunks if "(3)" in c.text]
    assert len(holding) == 1 and r"E(\theta)=\sum" in holding[0].text
    assert holding[0].kind == "equation"
    assert all(c.kind == "text" for c in chunks if c is not holding[0])


def test_bibliography_chunks_are_marked_as_references(tmp_path, settings):
    body = [(40, "1 Introduction", 14)] + [(40, t, 9) for t in BODY * 6]
    references = (
        [(40, t, 9) for t in BODY * 2]
        + [(40, "References", 14)]
        + [
            (40, f"[{i}] A. Author and B. Writer. A study of topic {i}. Journal {i}, 20{10 + i}.", 8)
            for i in range(1, 9)
        ]
    )
    path = write_placed_lines_pdf(tmp_path / "paper.pdf", [body, references], DEJAVU_MONO, width=400)
    chunks = chunk_pages([p.to_page_text() for p in parse_pdf(path, settings)], size=300, overlap=60)
    marked = [c for c in chunks if c.kind == "references"]
    assert marked and all(c.page == 2 for c in marked)
    assert all("[" in c.text and "Journal" in c.text for c in marked)
    assert "[1] A. Author" in marked[0].text and "References" in marked[0].text
    assert all(c.kind == "text" for c in chunks if c not in marked)
    assert any("triangle equality" in c.text and c.page == 2 for c in chunks if c.kind == "text")


def test_chinese_bibliography_heading_and_numbered_entries_without_a_heading():
    from backend.types import PageText

    zh = chunk_pages(
        [
            PageText(
                1,
                "正文第一段，讲方法。\n\n参考文献\n\n[1] 张三. 一种方法[J]. 学报, 2019.\n\n"
                "[2] 李四. 另一种方法[J]. 学报, 2020.",
            )
        ],
        size=60,
        overlap=10,
    )
    assert [c.kind for c in zh] == ["text", "references"]
    plain = chunk_pages(
        [
            PageText(
                1,
                "Body text about the method, long enough to be a chunk of its own.\n\n"
                + "\n\n".join(f"{i}. Some Author. Title {i}. Venue, 199{i}." for i in range(1, 5)),
            )
        ],
        size=80,
        overlap=10,
    )
    assert plain[0].kind == "text" and plain[-1].kind == "references"


def test_formulas_drawn_as_vector_paths_are_ocrd_in_place(settings):
    # the physics sample draws its display formulas as glyph outlines: no text layer at all
    from tests.conftest import SAMPLES

    text = parse_pdf(SAMPLES / "物理公式示例文档.pdf", settings)[0].text
    between = text.split("能级公式如下：")[1].split("这意味着")[0]
    assert "hω" in between and "(2)" in between
    hamiltonian = text.split("定义为：")[1].split("其中")[0]
    assert "2m" in hamiltonian and "(1)" in hamiltonian


def test_symbols_drawn_as_paths_inside_text_rows_are_ocrd_in_place(settings):
    # the physics sample also draws inline symbols (m, ω, E0 = ½ℏω) and the table's energies as outlines
    from tests.conftest import SAMPLES

    text = parse_pdf(SAMPLES / "物理公式示例文档.pdf", settings)[0].text
    where = text.split("2. 能级分布")[0].split("其中")[1]
    assert where.index("m") < where.index("是粒子质量") < where.index("ω") < where.index("是角频率")
    assert "E0" in text.split("不为零，而是")[1].split("。")[0]
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and "| 0." in ln]
    assert len(rows) == 4 and all(re.search(r"\| [0-3]\.5\S*ω \|", row) for row in rows), rows
    assert "En" in next(ln for ln in text.splitlines() if ln.startswith("| 量子数"))


def test_a_drawn_formula_with_a_text_number_is_found_and_keeps_its_number(tmp_path, settings):
    """A formula drawn as glyph outlines beside an equation number in the text layer was taken for a text
    row and left out (half the drawn pages of bench-formulas found no formula), and its "(1)" began the
    next sentence."""
    from backend.quality.formula_pages import FORMULAS, write_formula_pdf

    path = tmp_path / "drawn.pdf"
    write_formula_pdf(path, "en", "drawn", [FORMULAS[0]])
    [page] = parse_pdf(path, settings)
    assert [f.key for f in page.formulas] == ["p1_eq1"]
    formula = next(p for p in page.text.split("\n\n") if p.startswith("[formula image p1_eq1, OCR: "))
    assert formula.endswith("] (1)") and "(1) Here" not in page.text, page.text


def test_a_scanned_paragraph_without_a_relation_is_not_taken_for_a_formula():
    from PIL import Image

    from backend.documents.equations import ScannedFormulas

    formulas = ScannedFormulas(4, Image.new("RGB", (800, 1000), "white"))
    assert formulas.mark("2001/10/12", (10, 10, 200, 40)) == "2001/10/12" and formulas.found == []
    assert formulas.mark("E=mc² (2)", (300, 500, 500, 540)) == "[formula image p4_eq1, OCR: E=mc²] (2)"
    [found] = formulas.found
    assert found.file_name == "p4_eq1.png" and found.image.size == (224, 64)  # the box and a margin of 0.3 its height


def test_a_scanned_fraction_s_number_goes_after_its_mark_where_ocr_reads_it_mid_way():
    """OCR reads a display fraction row by row: its number, on the numerator's row, came before the
    denominator ("… V (1) √dk") and stayed inside the formula's reading."""
    from PIL import Image

    from backend.documents.equations import ScannedFormulas

    formulas = ScannedFormulas(2, Image.new("RGB", (800, 1000), "white"))
    marked = formulas.mark("Attention(Q,K,V)=softmax(QKT-)V (1) √dk", (100, 300, 700, 380))
    assert marked == "[formula image p2_eq1, OCR: Attention(Q,K,V)=softmax(QKT-)V √dk] (1)"
    assert formulas.mark("f (x) = g(1) + h (2.1a)", (100, 500, 700, 540)).endswith("OCR: f (x) = g(1) + h] (2.1a)")
