"""bench-formulas: generated formula pages parsed by the real parser and scored against their LaTeX."""

from __future__ import annotations

from backend.quality.bench_formulas import distance, format_formula_report, formula_text, normalise, run_formula_bench
from backend.quality.formula_pages import FORMULAS
from tests.conftest import make_settings
from tests.support.fake_openai import FakeOpenAI


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


def test_with_a_model_drawn_formulas_are_scored_as_its_vision_model_reads_them(tmp_path):
    """The vision model reads each drawn formula's kept image, as at ingest (the fake reads it right)."""
    truth = FORMULAS[3]
    with FakeOpenAI(reply=truth) as fake:
        model = make_settings(
            tmp_path / "data", DOCLENS_LLM_BASE_URL=fake.base_url, DOCLENS_LLM_MODEL="m", DOCLENS_LLM_VISION_MODEL="v"
        )
        report = run_formula_bench(model, langs=("en",), kinds=("drawn",), formulas=[truth])
        [request] = fake.vision_requests()
    [score] = report.scores
    assert score.distance == 0.0 and "[formula image" not in score.stored, score.stored
    assert request.body["model"] == "v" and "read by the vision model v" in format_formula_report(report)
