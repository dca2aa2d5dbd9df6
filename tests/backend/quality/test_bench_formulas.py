"""bench-formulas: generated formula pages parsed by the real parser and scored against their LaTeX."""

from __future__ import annotations

from backend.quality.bench_formulas import distance, format_formula_report, formula_text, normalise, run_formula_bench
from backend.quality.formula_pages import FORMULAS


def test_normalising_drops_spacing_braces_fonts_and_the_equation_number():
    assert (
        normalise(r"$$ \mathrm{Attention}(Q,K,V)=\frac{QK^{T}}{\sqrt{d_{k}}} $$ (1)")
        == r"Attention(Q,K,V)=\fracQK^T\sqrtd_k"
    )
    assert distance(r"$$ E_{n}=\hbar\omega $$", r"E_n=\hbar\omega") == 0.0
    assert distance("En = hω", r"E_n=\hbar\omega") > 0.5


def test_the_formula_is_what_is_left_once_the_context_is_taken_out():
    text = "Section 1. The relation below is used.\n\n$$ a^{2} $$ (1)\n\nHere each symbol has its meaning."
    context = ("Section 1. The relation below is used.", "Here each symbol has its meaning.")
    assert formula_text(text, context) == "$$ a^{2} $$ (1)"


def test_text_layer_pages_are_scored_per_language(settings):
    report = run_formula_bench(settings, kinds=("text",), formulas=FORMULAS[:2])
    assert [(s.lang, s.kind) for s in report.scores] == [("en", "text")] * 2 + [("zh", "text")] * 2
    assert all(s.distance < 0.2 for s in report.scores), [s.stored for s in report.scores]
    table = format_formula_report(report)
    assert "| text |" in table and "| kind | en | zh | all |" in table
