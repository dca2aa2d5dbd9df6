"""How the pieces of a row join (backend/documents/layout.py), on real papers' pages."""

from __future__ import annotations

from backend.documents.layout import _stack_text
from tests.backend.documents.test_tex_fonts import _page_text, _paper


def test_an_operators_limits_below_it_read_as_its_subscript_not_as_a_fraction():
    """1301.0676 p16: "∫‖x‖<2M min/f∈F ′ ψ(…)" read as if min were divided by f∈F′."""
    text = _page_text(_paper("1301.0676v5"), 16)
    assert "min_{f∈F ′}" in text and "min_{f∈F ∗}" in text, text
    assert "min/" not in text


def test_a_limit_under_lim_and_a_subscript_under_a_superscript():
    """1911.01196 p6 "Pr (lim/t→∞ L(xt) …)"; 1609.09000 p6 "at most V2/maxls frequent paths" (V²_max)."""
    lim = _page_text(_paper("1911.01196v1"), 6)
    assert "Pr (lim_{t→∞} L(xt) = L(x∗)) = 1" in lim, lim
    paths = _page_text(_paper("1609.09000v1"), 6)
    assert "at most Vmax^{2}ls frequent paths" in paths, paths


def test_stacked_pieces_without_an_operator_are_still_a_fraction():
    assert _stack_text("a+b", "c") == "a+b/c"
    assert _stack_text("Domain", "x") == "Domain/x"  # "min" inside a word is no operator
    assert _stack_text("n", "∑_{i=1}") == "∑_{i=1}^{n}"  # a sum's upper limit joins last
