"""protect_currency: prices stay text, every kind of math stays math."""

from __future__ import annotations

import pytest

from ui.latex import CURRENCY_HTML, LATEX_DELIMITERS, protect_currency

C = CURRENCY_HTML


@pytest.mark.parametrize(
    "text, expected",
    [
        ("It costs $5 and $10.", f"It costs {C}5 and {C}10."),
        ("$1,000,000 in sales", f"{C}1,000,000 in sales"),
        ("from $3.50 to $4.75!", f"from {C}3.50 to {C}4.75!"),
        ("a $2 million deal", f"a {C}2 million deal"),
        ("revenue of $3.5k", f"revenue of {C}3.5k"),
        ("价格是$5，运费$10。", f"价格是{C}5，运费{C}10。"),
        ("ends with $5", f"ends with {C}5"),
        ("($5)", f"({C}5)"),
    ],
)
def test_money_becomes_literal(text: str, expected: str) -> None:
    assert protect_currency(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Energy $E=mc^2$ holds.",
        "inline $x^2$ and $y_1$",
        "the number $5$ alone",
        "$2x + 1$ is linear",
        "$3 = y$",
        "$5 + x$",
        "display $$\\frac{a}{b}$$ math",
        "display $$5 and 10$$ math",
        "bracket \\[ x = $5 \\] math",
        "paren \\(a+b\\) math",
        "code `echo $5` stays",
        "```\nprice=$5\n```",
        "no dollars at all",
        "",
    ],
)
def test_math_and_code_untouched(text: str) -> None:
    assert protect_currency(text) == text


def test_money_next_to_math() -> None:
    text = "For $5 you get $x^2$ and $$E=mc^2$$ plus \\(a\\)."
    assert protect_currency(text) == f"For {C}5 you get $x^2$ and $$E=mc^2$$ plus \\(a\\)."


def test_already_escaped_dollar_is_left_alone() -> None:
    assert protect_currency("a \\$5 note") == "a \\$5 note"


def test_idempotent() -> None:
    once = protect_currency("It costs $5 and $10 with $x$.")
    assert protect_currency(once) == once


def test_all_four_delimiters_configured() -> None:
    lefts = {d["left"] for d in LATEX_DELIMITERS}
    assert lefts == {"$$", "\\[", "\\(", "$"}
    assert LATEX_DELIMITERS[0]["left"] == "$$"  # "$$" must be tried before "$"


def test_parsed_formula_renders_in_quoted_document_text() -> None:
    """A formula block the PP-StructureV3 endpoint read ("$$ <LaTeX> $$" in the chunk) renders as math in
    quoted passages; every other "$" and backslash of the document stays literal."""
    from ui.latex import BACKSLASH_HTML, document_text

    latex = r"E_{n}=\hbar\omega\left(n+\frac{1}{2}\right)"
    quoted = document_text(f"costs $5 and \\(x\\): $$ {latex} $$ done")
    assert f"$$ {latex} $$" in quoted
    assert quoted.startswith(f"costs {CURRENCY_HTML}5 and {BACKSLASH_HTML}(x{BACKSLASH_HTML}):")
    assert document_text("$$5 and 10$$") == CURRENCY_HTML * 2 + "5 and 10" + CURRENCY_HTML * 2


def test_a_formula_kept_as_an_image_is_said_so_in_the_page_s_language() -> None:
    """The parser's mark ("[formula image p1_eq1, OCR: …]") is no text of the document: the page says what
    it is, in its own language, and the OCR reading stays literal."""
    from ui.latex import document_text

    mark = "定义为：[formula image p1_eq1, OCR: H=p$2/2m] (1) and [formula image p1_eq2]"
    english = document_text(mark)
    assert "[formula image" not in english and "formula shown as an image; OCR reads: H=p" in english
    assert f"H=p{CURRENCY_HTML}2/2m" in english and "formula shown as an image" in english.split("(1)")[1]
    chinese = document_text(mark, "zh")
    assert "公式为图片；OCR 识别为：H=p" in chinese and chinese.endswith("［公式为图片］")


def test_extractive_answer_renders_parsed_formula() -> None:
    from backend.answering.extractive import extractive_answer
    from backend.types import Source
    from ui.chat.panels import extractive_markdown

    text = "能级公式如下：\n\n$$ E_{n}=\\hbar\\omega\\left(n+\\frac{1}{2}\\right) $$\n\n基态能量不为零。"
    source = Source(file="phys.pdf", doc_id="d", page=1, page_end=1, chunk_index=0, text=text, relevance=80.0)
    answer = extractive_answer("能级公式", [source], 50.0)
    markdown = extractive_markdown(answer, "zh")
    assert "$$ E_{n}=\\hbar\\omega\\left(n+\\frac{1}{2}\\right) $$" in markdown
