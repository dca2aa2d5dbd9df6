"""protect_currency: prices stay text, every kind of math stays math."""

from __future__ import annotations

import pytest

from ui.latex import CURRENCY_HTML, LATEX_DELIMITERS, protect_currency

C = CURRENCY_HTML


@pytest.mark.parametrize("text, expected", [
    ("It costs $5 and $10.", f"It costs {C}5 and {C}10."),
    ("$1,000,000 in sales", f"{C}1,000,000 in sales"),
    ("from $3.50 to $4.75!", f"from {C}3.50 to {C}4.75!"),
    ("a $2 million deal", f"a {C}2 million deal"),
    ("revenue of $3.5k", f"revenue of {C}3.5k"),
    ("价格是$5，运费$10。", f"价格是{C}5，运费{C}10。"),
    ("ends with $5", f"ends with {C}5"),
    ("($5)", f"({C}5)"),
])
def test_money_becomes_literal(text: str, expected: str) -> None:
    assert protect_currency(text) == expected


@pytest.mark.parametrize("text", [
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
])
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
