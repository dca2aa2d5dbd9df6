"""Document summaries by the model (cached by the caller), and the first passages when there is none."""

from __future__ import annotations

from typing import Iterable, Optional, Sequence

from backend.answering.truncation import clip
from backend.errors import LLMError
from backend.llm.client import LLMClient
from backend.text import question_language

SUMMARY_INPUT_CHARS = 12000

SUMMARY_SYSTEM_PROMPT = """You summarize documents faithfully, without adding anything that is not in the text."""


def sample_text(chunks: Sequence[str], max_chars: int = SUMMARY_INPUT_CHARS) -> str:
    """The whole text when it fits, else excerpts from its start, middle and end (a third each)."""
    texts = [c.strip() for c in chunks if c and c.strip()]
    if sum(len(t) + 2 for t in texts) <= max_chars:
        return "\n\n".join(texts)
    third = max_chars // 3
    start = _take(texts, third)
    middle_from = max(len(start), len(texts) // 2 - 1)
    middle = _take(texts[middle_from:], third)
    tail_from = middle_from + len(middle)
    end = list(reversed(_take(list(reversed(texts[tail_from:])), third)))
    sections = ["\n\n".join(part) for part in (start, middle, end) if part]
    return "\n\n[…]\n\n".join(sections)


def _take(texts: Sequence[str], budget: int) -> list[str]:
    taken: list[str] = []
    for text in texts:
        if budget <= 0:
            break
        piece = text if len(text) <= budget else clip(text, budget)
        taken.append(piece)
        budget -= len(piece) + 2
    return taken


def summarize_document(
    llm: Optional[LLMClient],
    file: str,
    text_chunks: Sequence[str],
    *,
    language: Optional[str] = None,
    max_chars: int = SUMMARY_INPUT_CHARS,
) -> str:
    """A concise Markdown summary (overview, key points, formulas in LaTeX). Raises LLMError when the model
    is missing or fails, so that the caller caches only real summaries and shows fallback_summary otherwise."""
    if llm is None or not llm.configured:
        raise LLMError("no language model is configured (set llm.base_url and llm.model)")
    sample = sample_text(text_chunks, max_chars)
    if not sample:
        raise LLMError(f"{file} has no text to summarize")
    user = (
        f'Summarize the document "{file}" in Markdown: start with a two or three sentence overview, then '
        f"3 to 7 bullet points with the key ideas, methods, results and numbers. Keep formulas in LaTeX "
        f"exactly as written ($...$ inline, $$...$$ display). "
        f"{_summary_language_instruction(sample[:2000], language)}\n\n"
        f"The text (excerpts from the start, middle and end when the document is long):\n\n{sample}"
    )
    reply = llm.chat([{"role": "system", "content": SUMMARY_SYSTEM_PROMPT}, {"role": "user", "content": user}])
    if not reply.strip():
        raise LLMError(f"the model returned an empty summary of {file}")
    return reply.strip()


def _summary_language_instruction(sample: str, language: Optional[str]) -> str:
    code = language or question_language(sample)
    if code == "zh":
        return "Write the summary in Chinese (简体中文)."
    if language:
        return f"Write the summary in {'English' if language == 'en' else language}."
    return "Write the summary in the language of the document."


def fallback_summary(file: str, first_passages: Iterable[str], reason: str = "") -> str:
    """For the no-model mode: the document's first passages instead of a summary."""
    why = (reason or "No language model is configured").rstrip(".")
    passages = [p.strip() for p in first_passages if p and p.strip()][:3]
    quoted = ["\n".join(f"> {line}" for line in clip(" ".join(p.split()), 500).splitlines()) for p in passages]
    body = "\n\n".join(quoted) if quoted else "_The document has no extractable text._"
    return f"**{file}**\n\n_{why}, so here are the document's first passages instead of a summary._\n\n{body}"
