"""Turning ranked sources into answers: prompts, citations, streaming, figures, summaries, fallbacks.

Pure logic on top of LLMClient; callers pass the sources, figures and text in (no database here).
Nothing here crashes on a model failure: the answer falls back to quoting the best passages, with a
one-line notice that says why. LaTeX is passed through exactly as the model or the document wrote it.

One module per concern: ``prompts`` (numbered sources, history, the standalone follow-up question),
``citations``, ``answers`` (the streamed model answer), ``extractive`` (answers that quote passages),
``figures`` (questions about one figure), ``summaries``; ``language`` and ``clip`` are shared helpers.
"""

from backend.answering.answers import answer_question, answer_stream, model_failed_notice
from backend.answering.citations import extract_citations, validate_citations
from backend.answering.extractive import (
    EXCERPT_CHARS,
    EXTRACTIVE_PASSAGES,
    NO_MODEL_NOTICE,
    NO_SOURCES_TEXT,
    best_excerpt,
    extractive_answer,
    format_passage,
    split_sentences,
)
from backend.answering.figures import (
    answer_about_figure,
    detect_image_mime,
    figure_context,
    figure_label,
    figure_number,
    figure_reference_pattern,
    figure_references,
)
from backend.answering.language import language_instruction
from backend.answering.prompts import (
    HistoryLike,
    build_prompt,
    condense_question,
    format_sources,
    normalize_history,
    source_label,
)
from backend.answering.summaries import fallback_summary, sample_text, summarize_document
from backend.types import AnswerUpdate

__all__ = [
    "EXCERPT_CHARS",
    "EXTRACTIVE_PASSAGES",
    "NO_MODEL_NOTICE",
    "NO_SOURCES_TEXT",
    "AnswerUpdate",
    "HistoryLike",
    "answer_about_figure",
    "answer_question",
    "answer_stream",
    "best_excerpt",
    "build_prompt",
    "condense_question",
    "detect_image_mime",
    "extract_citations",
    "extractive_answer",
    "fallback_summary",
    "figure_context",
    "figure_label",
    "figure_number",
    "figure_reference_pattern",
    "figure_references",
    "format_passage",
    "format_sources",
    "language_instruction",
    "model_failed_notice",
    "normalize_history",
    "sample_text",
    "source_label",
    "split_sentences",
    "summarize_document",
    "validate_citations",
]
