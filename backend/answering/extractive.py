"""Answers made of the best passages: the no-model mode and the fallback when the model fails."""

from __future__ import annotations

import re
from typing import Optional, Sequence

from backend.answering.prompts import source_label
from backend.answering.truncation import MATH, clip
from backend.text import REQUEST_WORDS, query_terms
from backend.types import Answer, Source

EXTRACTIVE_PASSAGES = 3
EXCERPT_CHARS = 420

NO_MODEL_NOTICE = "No language model is configured, so this answer quotes the most relevant passages."
NO_SOURCES_TEXT = "The documents in this knowledge base contain no passage that matches the question."


def split_sentences(text: str) -> list[str]:
    """Sentences of a passage (Chinese and Western punctuation), never cutting inside a formula."""
    formulas: list[str] = []

    def protect(match: re.Match[str]) -> str:
        formulas.append(match.group(0))
        return f"\x00{len(formulas) - 1}\x00"

    flat = MATH.sub(protect, " ".join(text.split()))
    parts = re.split(r"(?<=[。！？；])|(?<=[.!?;])\s+(?=\S)", flat)
    restore = re.compile(r"\x00(\d+)\x00")
    return [restore.sub(lambda m: formulas[int(m.group(1))], p).strip() for p in parts if p and p.strip()]


def best_excerpt(question: str, text: str, max_chars: int = EXCERPT_CHARS) -> str:
    """The sentences sharing the most words with the question, in document order, within max_chars."""
    sentences = split_sentences(text)
    if not sentences:
        return ""
    terms = set(query_terms(question, chinese="pairs", drop=REQUEST_WORDS))  # pairs: no segmenter for passages
    overlap = [sum(1 for t in terms if t in s.lower()) for s in sentences]
    if not any(overlap):
        return clip(" ".join(sentences), max_chars)
    # Sentences that share less than half of the best sentence's words only dilute the excerpt.
    threshold = max(1, (max(overlap) + 1) // 2)
    ranked = sorted(range(len(sentences)), key=lambda i: (-overlap[i], i))
    chosen: list[int] = []
    used = 0
    for index in ranked:
        if overlap[index] < threshold or (chosen and used + len(sentences[index]) > max_chars):
            continue
        chosen.append(index)
        used += len(sentences[index]) + 1
    chosen.sort()
    pieces = []
    for position, index in enumerate(chosen):
        if position and index != chosen[position - 1] + 1:
            pieces.append("…")
        pieces.append(sentences[index])
    return clip(" ".join(pieces), max_chars)


def format_passage(number: int, source: Source, excerpt: str) -> str:
    quoted = "\n".join(f"> {line}" if line else ">" for line in excerpt.splitlines()) or "> …"
    return f"**[{number}] {source_label(source)}** · relevance {source.relevance:.0f}%\n{quoted}"


def extractive_answer(
    question: str,
    sources: Sequence[Source],
    confidence: float,
    reason: str = NO_MODEL_NOTICE,
    *,
    searched_question: Optional[str] = None,
    max_passages: int = EXTRACTIVE_PASSAGES,
) -> Answer:
    """An answer made of the best passages (file, page, relevance, trimmed excerpt) and one notice line."""
    notice = reason or NO_MODEL_NOTICE
    numbered = list(sources)
    if not numbered:
        return Answer(
            f"_{notice}_\n\n{NO_SOURCES_TEXT}",
            "extractive",
            confidence,
            [],
            notice=notice,
            question=searched_question or question,
        )
    passages = [
        format_passage(n, s, best_excerpt(question, s.text)) for n, s in enumerate(numbered[:max_passages], start=1)
    ]
    text = f"_{notice}_\n\n" + "\n\n".join(passages)
    searched = searched_question or question
    excerpts = [best_excerpt(searched, s.text) or s.text[:EXCERPT_CHARS] for s in numbered[:max_passages]]
    return Answer(text, "extractive", confidence, numbered, notice=notice, question=searched, excerpts=excerpts)
