"""Display formulas of a text layer stored as LaTeX read from glyph geometry; formulas drawn only as
glyph outlines are marked as images, their OCR reading never passed off as the formula."""

from __future__ import annotations

import pytest

from backend.documents.pdf import parse_pdf
from backend.quality.formula_pages import FORMULAS, draw_formula, write_formula_pdf
from tests.conftest import SAMPLES, SHARED


def _formula_paragraph(path, settings) -> str:
    [page] = parse_pdf(path, settings)
    return next(p for p in page.text.split("\n\n") if p.startswith("$$"))


def test_a_fraction_a_superscript_and_a_root_become_latex(tmp_path, settings):
    path = tmp_path / "attention.pdf"
    write_formula_pdf(path, "en", "text", [FORMULAS[0]])  # the "softmax QKT V √dk"
    stored = _formula_paragraph(path, settings)
    assert stored == r"$$ \mathrm{Attention}(Q,K,V)=\mathrm{softmax}(\frac{QK^{T}}{\sqrt{d_{k}}})V $$ (1)"


def test_a_fraction_of_words_is_a_formula_in_a_chinese_page(tmp_path, settings):
    path = tmp_path / "cagr.pdf"
    write_formula_pdf(path, "zh", "text", [FORMULAS[1]])  # the "1 CAGR = Ending Value n-1 Beginning Value"
    [page] = parse_pdf(path, settings)
    paragraphs = page.text.split("\n\n")
    assert paragraphs[0] == "第1节。下面的关系式在整个模型中使用。" and paragraphs[-1] == "其中各符号的含义与前文相同。"
    assert r"\frac{\mathrm{Ending\ Value}}{\mathrm{Beginning\ Value}})^{1/n}-1 $$" in paragraphs[1]


def test_hats_hbar_and_greek_letters_are_named(tmp_path, settings):
    path = tmp_path / "oscillator.pdf"
    write_formula_pdf(path, "en", "text", [FORMULAS[2], FORMULAS[3]])
    first, second = (p.text for p in parse_pdf(path, settings))
    assert r"$$ \hat{H}=\frac{\hat{p}^{2}}{2m}+\frac{1}{2}m\omega^{2}\hat{x}^{2} $$ (1)" in first
    assert r"$$ E_{n}=\hbar\omega(n+\frac{1}{2}) $$" in second


def test_a_text_line_over_a_radical_bar_stays_text(tmp_path, settings):
    from reportlab.pdfgen.canvas import Canvas

    path = tmp_path / "norm.pdf"
    canvas = Canvas(str(path), pagesize=(400, 300))
    canvas.setFont("Helvetica", 11)
    canvas.drawString(40, 200, "where the norm is the standard Euclidean norm on matrices:")
    draw_formula(canvas, r"N=\sqrt{\mathrm{Tr} MM}", 150, 178, size=11)
    canvas.drawString(40, 140, "The estimator follows from this norm.")
    canvas.save()
    [page] = parse_pdf(path, settings)
    assert page.text.split("\n\n")[0] == "where the norm is the standard Euclidean norm on matrices:"
    assert r"$$ N=\sqrt{\mathrm{Tr\ MM}} $$" in page.text


@pytest.mark.slow
def test_a_real_papers_display_fraction_becomes_latex(settings):
    [paper] = (SHARED / "bench" / "arxiv-dev" / "docs").glob("2201.05690v5*.pdf")
    text = parse_pdf(paper, settings)[1].text
    assert r"$$ L(z)=1-\frac{1}{1-q+zG(z)}+o(1), $$ (5)" in text


@pytest.mark.slow
def test_lines_of_prose_around_an_inline_fraction_are_no_formula(settings):
    r"""2305.16335 p11: two lines of prose of five long words each, one holding an inline fraction, were
    read as one display formula by glyph geometry: "\mathrm{Ttbhheainmsdmo}\gamma ve^{j}…"."""
    [paper] = (SHARED / "bench" / "arxiv-dev" / "docs").glob("2305.16335v1*.pdf")
    text = parse_pdf(paper, settings)[10].text
    assert "the moving-average parameter, b is the last updated b and" in text
    assert "This method replaces the penalty function" in text and "Ttbhh" not in text


@pytest.mark.slow
def test_a_footnotes_rule_is_no_fraction_bar_and_a_link_is_no_formula(settings):
    r"""1911.01196 p1: the rule over the footnotes, a line of text above it and a footnote in smaller type
    under it, was taken for a fraction's bar: "$$ *\mathrm{Currently\ at\ Google\ Research}. $$".
    2312.07556 p6: a footnote's link read as "$$ 3\mathrm{https}://\mathrm{github}… $$"."""
    [spherical] = (SHARED / "bench" / "arxiv-dev" / "docs").glob("1911.01196v1*.pdf")
    assert "∗Currently at Google Research." in parse_pdf(spherical, settings)[0].text.split("\n\n")
    [federated] = (SHARED / "bench" / "arxiv-dev" / "docs").glob("2312.07556v1*.pdf")
    text = "\n\n".join(page.text for page in parse_pdf(federated, settings))
    assert "3https://github.com/amazon-science/sccl" in text.split("\n\n") and r"\mathrm{https}" not in text


@pytest.mark.slow
def test_limits_under_lim_inf_and_sup_stay_with_their_operator(settings):
    """The limit line under "inf" was read left to right with it: "in_{\\theta\\in\\Theta}f", and "lim" under
    n→∞ as "nl_{\\to}im_{\\infty}", lost to a keyword search for either (arxiv-dev's held-out half, page 14)."""
    [paper] = (SHARED / "bench" / "arxiv-dev" / "docs").glob("1301.0676v5*.pdf")
    pages = parse_pdf(paper, settings)
    text = pages[13].text
    assert r"$$ \inf_{\theta\in\Theta_{ǫ}^{*}(5M)}\Psi(\theta,P_{n})>\Psi(\tilde{\theta}_{n},P_{n}) $$" in text
    assert r"$$ \lim_{n\to\infty}d(\tilde{\theta}_{n},\Theta^{'})=0a.s. $$" in text
    assert r"\liminf_{n}\inf_{\theta\in\Theta_{ǫ}^{*}(5M)}\Psi(\theta,P_{n})" in text, "lim inf inf: each its own"
    assert r"-\limsup_{n}\inf_{\theta\in\Theta^{'}}\Psi(\theta,P_{n})" in pages[12].text


def test_a_formula_drawn_as_outlines_is_marked_as_an_image_and_its_image_kept(settings):
    """Issue 29 item 2: OCR garbles a drawn formula, so its reading is marked as OCR of an image whose
    key names the image kept for the vision model (answering/formula_images.py)."""
    page = parse_pdf(SAMPLES / "物理公式示例文档.pdf", settings)[0]
    hamiltonian = page.text.split("定义为：")[1].split("其中")[0].strip()
    assert hamiltonian.startswith("[formula image p1_eq1, OCR: ") and hamiltonian.endswith("] (1)")
    levels = page.text.split("能级公式如下：")[1].split("这意味着")[0].strip()
    assert levels.startswith("[formula image p1_eq2, OCR: ") and levels.endswith("] (2)")
    assert [f.file_name for f in page.formulas] == ["p1_eq1.png", "p1_eq2.png"]
    widths = [f.image.size[0] for f in page.formulas]
    assert all(100 < width < 1500 for width in widths), widths  # the formula, not the page
