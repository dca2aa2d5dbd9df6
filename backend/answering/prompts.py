"""The chat prompts: numbered sources, earlier turns, and the follow-up question made standalone."""

from __future__ import annotations

import logging
import re
from typing import Any, Optional, Sequence, Union

from backend.answering.language import language_instruction
from backend.answering.truncation import clip
from backend.errors import LLMError
from backend.llm.client import LLMClient
from backend.text import question_language
from backend.types import Source

logger = logging.getLogger(__name__)

HistoryLike = Optional[Sequence[Union[dict[str, Any], Sequence[Any]]]]

MAX_SOURCE_CHARS = 2000  # per numbered source in the prompt
MAX_SOURCES_CHARS = 12000  # all sources together
MAX_HISTORY_MESSAGES = 6  # three turns
MAX_HISTORY_MESSAGE_CHARS = 1200

ANSWER_SYSTEM_PROMPT = """You are DocLens, an assistant that answers questions about the user's PDF documents.
Answer only from the numbered sources you are given; do not use outside knowledge.
Cite the sources for every statement with their numbers in square brackets, like [1] or [2][3]. \
Only cite numbers that appear in the sources list.
If the sources do not contain the answer, say so plainly instead of guessing.
Keep mathematical formulas in LaTeX exactly as in the sources: $...$ inline and $$...$$ for display.
"[formula image …, OCR: …]" in a source is a formula only shown as an image, with an OCR reading that is often wrong: never present that reading as the formula; say the formula is on that page of the source.
Be concise and use Markdown. {language_instruction}"""

CONDENSE_SYSTEM_PROMPT = """Rewrite the user's follow-up question as one standalone question that can be \
understood without the conversation (resolve "it", "this", "the second one", 它, 这个, ...). Keep the \
language of the follow-up question. Reply with the question only."""


def source_label(source: Source) -> str:
    pages = f"p. {source.page}" if source.page_end in (0, source.page) else f"pp. {source.page}–{source.page_end}"
    return f"{source.file}, {pages}"


def format_sources(sources: Sequence[Source]) -> str:
    """Sources numbered [1]..[n] with file and page, each capped so the prompt stays bounded."""
    blocks = []
    budget = MAX_SOURCES_CHARS
    for number, source in enumerate(sources, start=1):
        text = clip(source.text.strip(), min(MAX_SOURCE_CHARS, max(200, budget)))
        budget -= len(text)
        blocks.append(f"[{number}] {source_label(source)}\n{text}")
    return "\n\n".join(blocks)


def normalize_history(history: HistoryLike) -> list[dict[str, str]]:
    """Earlier turns as chat messages: accepts {"role", "content"} dicts or (user, assistant) pairs."""
    messages: list[dict[str, str]] = []
    for item in history or []:
        if isinstance(item, dict):
            role, content = item.get("role"), item.get("content")
            if role in ("user", "assistant") and isinstance(content, str) and content.strip():
                messages.append({"role": role, "content": content})
        elif isinstance(item, (list, tuple)) and len(item) == 2:
            for role, content in zip(("user", "assistant"), item):
                if isinstance(content, str) and content.strip():
                    messages.append({"role": role, "content": content})
    recent = messages[-MAX_HISTORY_MESSAGES:]
    return [{"role": m["role"], "content": clip(m["content"], MAX_HISTORY_MESSAGE_CHARS)} for m in recent]


def build_prompt(
    question: str, sources: Sequence[Source], history: HistoryLike = None, language: Optional[str] = None
) -> list[dict[str, str]]:
    """Chat messages: instructions, earlier turns, then the numbered sources and the question."""
    system = ANSWER_SYSTEM_PROMPT.format(language_instruction=language_instruction(question, language))
    user = f"Sources:\n\n{format_sources(sources)}\n\nQuestion: {question.strip()}"
    return [{"role": "system", "content": system}, *normalize_history(history), {"role": "user", "content": user}]


# ---------------------------------------------------------------- multi-turn


def condense_question(llm: Optional[LLMClient], history: HistoryLike, question: str) -> str:
    """A standalone version of a follow-up question, for retrieval. The raw question when there is no
    history, no model, or the model fails."""
    turns = normalize_history(history)
    if not turns or llm is None or not llm.configured:
        return question
    conversation = "\n".join(f"{m['role'].capitalize()}: {m['content']}" for m in turns)
    messages = [
        {"role": "system", "content": CONDENSE_SYSTEM_PROMPT},
        {"role": "user", "content": f"Conversation:\n{conversation}\n\nFollow-up question: {question}"},
    ]
    try:
        reply = llm.chat(messages, temperature=0.0, max_tokens=200)
    except LLMError as exc:
        logger.warning("condensing the question failed, searching the raw question: %s", exc)
        return question
    return _clean_condensed(reply, question)


def _clean_condensed(reply: str, question: str) -> str:
    lines = [line.strip() for line in reply.strip().splitlines() if line.strip()]
    if not lines:
        return question
    text = re.sub(r"^(standalone question|question|独立问题|问题)\s*[:：]\s*", "", lines[0], flags=re.I)
    text = text.strip().strip("\"'“”「」").strip()
    # A rambling reply is worse for retrieval than the user's own words.
    return text if text and len(text) <= 4 * len(question) + 200 else question


def translation_prompt(question: str) -> list[dict[str, str]]:
    """The question in the other language (zh <-> en), for the retriever's cross-lingual search."""
    target = "English" if question_language(question) == "zh" else "Chinese (简体中文)"
    return [
        {
            "role": "system",
            "content": f"Translate the user's question into {target}. Reply with the "
            f"translation only, no quotes or explanations.",
        },
        {"role": "user", "content": question},
    ]


def said_by_user(history: HistoryLike, question: str) -> str:
    """Everything the user wrote in the conversation, this question included (see scope.search_scope)."""
    return "\n".join([*(turn.get("content") or "" for turn in normalize_history(history)), question])
