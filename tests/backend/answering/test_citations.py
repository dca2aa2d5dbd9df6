"""Citations: lists, ranges, formulas, numbers outside the sources."""

from __future__ import annotations

from backend.answering.citations import extract_citations, validate_citations


def test_extract_citations_handles_lists_ranges_and_ignores_formulas() -> None:
    text = "Attention [2] uses softmax [1, 3]. See also [4-5] and 【6】. $a[9]$ and $$b[8]$$ are math [2]."
    assert extract_citations(text) == [2, 1, 3, 4, 5, 6]
    assert extract_citations("a [link](http://x) here") == []


def test_validate_citations_drops_numbers_outside_the_sources() -> None:
    cleaned, removed = validate_citations("Yes [1][7]. Also [2, 9]. Formula $x[7]$ stays.", 2)
    assert removed == [7, 9]
    assert cleaned == "Yes [1]. Also [2]. Formula $x[7]$ stays."
    unchanged, none_removed = validate_citations("Fine [1, 2].", 2)
    assert unchanged == "Fine [1, 2]." and none_removed == []
