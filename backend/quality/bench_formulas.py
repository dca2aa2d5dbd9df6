"""Formula benchmark: pages with known formulas (formula_pages) parsed by the real parser, the text
that stands for each formula compared with its LaTeX.

Each page holds one formula between two sentences of context; what is left of the page's text once the
context is taken out is the formula as stored. Both sides are normalised (no white space, braces, $,
\\mathrm, \\left/\\right, an equation number) and compared by normalised edit distance (Levenshtein over
the longer length: 0 is exact, 1 is nothing alike), per kind of page and per language.
"""

from __future__ import annotations

import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import mean
from typing import Optional, Sequence

from rapidfuzz.distance import Levenshtein

from backend.answering.formula_images import FormulaReader
from backend.documents.equations import save_formulas
from backend.documents.pdf import ParsedPage, parse_pdf
from backend.quality.formula_pages import FORMULAS, KINDS, FormulaPage, write_formula_pdf
from backend.settings import Settings

_DROPPED = re.compile(r"\\(?:mathrm|operatorname|text|left|right|displaystyle|limits)|\\[,;!: ]|[{}$\s]")
_NUMBER = re.compile(r"\(\s*\d+\s*\)\s*$")
_CONTEXT_SIMILARITY = 0.7


@dataclass
class FormulaScore:
    lang: str
    kind: str
    latex: str
    stored: str
    distance: float  # normalised edit distance after normalisation


@dataclass
class FormulaReport:
    scores: list[FormulaScore]
    seconds: dict[str, float]  # parsing time per kind
    vision_model: str = ""  # the model that read the drawn formulas ("": none, their OCR reading stays)

    def by(self, lang: Optional[str] = None, kind: Optional[str] = None) -> list[FormulaScore]:
        return [s for s in self.scores if (lang is None or s.lang == lang) and (kind is None or s.kind == kind)]


def normalise(latex: str) -> str:
    """LaTeX as compared: an equation number, spacing, braces and font commands taken away."""
    text = latex.strip()
    text = _NUMBER.sub("", text)
    return _DROPPED.sub("", text)


def distance(stored: str, truth: str) -> float:
    return Levenshtein.normalized_distance(normalise(stored), normalise(truth))


def formula_text(page_text: str, context: Sequence[str]) -> str:
    """The page's text without its context sentences: what stands for the formula."""
    kept = []
    for paragraph in page_text.split("\n\n"):
        flat = " ".join(paragraph.split())
        if flat and not any(Levenshtein.normalized_similarity(flat, c) >= _CONTEXT_SIMILARITY for c in context):
            kept.append(flat)
    return " ".join(kept)


def run_formula_bench(
    settings: Settings,
    langs: Sequence[str] = ("en", "zh"),
    kinds: Sequence[str] = KINDS,
    formulas: Sequence[str] = FORMULAS,
) -> FormulaReport:
    scores: list[FormulaScore] = []
    seconds: dict[str, float] = {}
    reader = _vision_reader(settings)
    with tempfile.TemporaryDirectory(prefix="doclens-formulas-") as folder:
        for kind in kinds:
            for lang in langs:
                path = Path(folder) / f"formulas-{kind}-{lang}.pdf"
                pages = write_formula_pdf(path, lang, kind, formulas)
                started = time.perf_counter()
                texts = [_read(page, reader, Path(folder) / f"{kind}-{lang}") for page in parse_pdf(path, settings)]
                seconds[kind] = seconds.get(kind, 0.0) + time.perf_counter() - started
                scores.extend(_score(page, texts[page.number - 1]) for page in pages)
    return FormulaReport(scores, seconds, reader.llm.vision_model if reader and reader.llm else "")


def _vision_reader(settings: Settings) -> Optional[FormulaReader]:
    """With a model configured, drawn formulas are read by its vision model, as at ingest."""
    if not (settings.llm_configured and settings.ingest.read_formulas):
        return None
    from backend.llm.client import LLMClient

    return FormulaReader(LLMClient(settings), limit=10_000)


def _read(page: ParsedPage, reader: Optional[FormulaReader], images: Path) -> str:
    if reader is None or not page.formulas:
        return page.text
    save_formulas(page.formulas, images)
    return reader.read(page.text, lambda key: images / f"{key}.png")


def _score(page: FormulaPage, text: str) -> FormulaScore:
    stored = formula_text(text, page.context)
    return FormulaScore(page.lang, page.kind, page.latex, stored, distance(stored, page.latex))


def format_formula_report(report: FormulaReport, show: bool = False) -> str:
    langs = sorted({s.lang for s in report.scores})
    kinds = [k for k in KINDS if report.by(kind=k)]
    header = "| kind | " + " | ".join(langs) + " | all | exact | s/page |"
    read_by = f"read by the vision model {report.vision_model}" if report.vision_model else "no model: their OCR"
    lines = [
        "normalised edit distance of the stored LaTeX (0 = exact, lower is better)",
        f"drawn and scanned formulas: {read_by}",
        header,
        "|" + "---|" * (len(langs) + 4),
    ]
    for kind in kinds:
        cells = [f"{mean(s.distance for s in report.by(lang, kind)):.3f}" for lang in langs]
        rows = report.by(kind=kind)
        exact = sum(s.distance == 0 for s in rows)
        per_page = report.seconds.get(kind, 0.0) / len(rows)
        lines.append(
            f"| {kind} | " + " | ".join(cells) + f" | {mean(s.distance for s in rows):.3f} | {exact}/{len(rows)} | "
            f"{per_page:.2f} |"
        )
    if show:
        lines += [f"{s.kind}/{s.lang} {s.distance:.2f}  {s.stored}  <-  {s.latex}" for s in report.scores]
    return "\n".join(lines)
