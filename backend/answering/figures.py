"""Questions about one figure: its context in the document, the vision model, and the fallbacks."""

from __future__ import annotations

import logging
import re
from typing import Optional, Sequence

from backend.answering.extractive import EXTRACTIVE_PASSAGES, NO_MODEL_NOTICE, best_excerpt, format_passage
from backend.answering.language import language_instruction
from backend.answering.truncation import clip, window
from backend.errors import LLMError
from backend.llm.client import LLMClient
from backend.types import Answer, Figure, Source

logger = logging.getLogger(__name__)

FIGURE_SYSTEM_PROMPT = """You are DocLens, an assistant that explains figures and charts from the user's PDF \
documents. Describe what the figure shows as it relates to the question: axes, labels, trends, values. \
Use the caption and the surrounding document text to interpret it, and say when something cannot be read. \
Keep formulas in LaTeX ($...$, $$...$$). Be concise and use Markdown. {language_instruction}"""

FIGURE_TEXT_SYSTEM_PROMPT = """You are DocLens. The image of a figure could not be shown to you; answer the \
question about the figure from its caption and the document text around it only, and say what cannot be \
known without seeing the image. Keep formulas in LaTeX ($...$, $$...$$). Be concise and use Markdown. \
{language_instruction}"""


_FIGURE_NUMBER = re.compile(r"(?:\bfig(?:ure)?\.?|图)\s*(\d+(?:\.\d+)?)", re.I)


def figure_number(caption: str) -> Optional[str]:
    """The figure's number from its caption ("Figure 3: ...", "Fig. 2.1", "图3 ..."), if any."""
    match = _FIGURE_NUMBER.search(caption or "")
    return match.group(1) if match else None


def figure_reference_pattern(number: str) -> re.Pattern[str]:
    """Mentions of one figure: 如图3, 图3, 见图 3, Figure 3, Fig. 3, Fig 3 (not Figure 30 or 图3.1)."""
    escaped = re.escape(number)
    return re.compile(rf"(?:(?:如|见|参见)?图\s*{escaped}|\bfig(?:ure)?s?\.?\s*{escaped})(?!\d|\.\d)", re.I)


def figure_label(figure: Figure, caption_chars: int = 80) -> str:
    label = f"figure p{figure.page} of {figure.file}"
    caption = " ".join((figure.caption or "").split())
    return f"{label} ({clip(caption, caption_chars)})" if caption else label


def figure_references(figure: Figure, document_text: str, max_chars: int) -> list[str]:
    """Paragraphs of the document that refer to the figure by number (long ones cut around the mention)."""
    number = figure_number(figure.caption)
    if not number or not document_text:
        return []
    pattern = figure_reference_pattern(number)
    caption = " ".join(figure.caption.split())
    found: list[str] = []
    used = 0
    for paragraph in re.split(r"\n\s*\n", document_text):
        flat = " ".join(paragraph.split())
        if not flat or (caption and flat.startswith(caption[:40]) and len(flat) <= len(caption) + 20):
            continue  # the caption itself
        for match in pattern.finditer(flat):
            snippet = flat if len(flat) <= 600 else window(flat, match.start(), match.end(), 280)
            if snippet in found:
                continue
            if used + len(snippet) > max_chars:
                return found
            found.append(snippet)
            used += len(snippet)
            if snippet == flat:
                break
    return found


def figure_context(figure: Figure, page_text: str, document_text: str = "", max_chars: int = 3000) -> str:
    """What the document says about a figure: caption, the sentences next to it that refer to it (found at
    ingest: they may end the previous page), the words drawn in it, the text of its page, paragraphs that
    refer to it by number."""
    parts = []
    caption = clip(" ".join((figure.caption or "").split()), 400)
    if caption:
        parts.append(f"Caption: {caption}")
    for title, text, limit in (("Next to the figure", figure.context, 600), ("Words in the figure", figure.text, 600)):
        flat = clip(" ".join((text or "").split()), limit)
        if flat:
            parts.append(f"{title}: {flat}")
    remaining = max(0, max_chars - sum(len(p) for p in parts) - 120)
    references = figure_references(figure, document_text, remaining // 2)
    page_budget = remaining - sum(len(r) + 3 for r in references)
    page = clip(" ".join((page_text or "").split()), max(0, page_budget))
    if page:
        parts.append(f"Text of page {figure.page}:\n{page}")
    if references:
        parts.append("Passages that refer to this figure:\n" + "\n".join(f"- {r}" for r in references))
    return clip("\n\n".join(parts), max_chars)


def detect_image_mime(data: bytes, default: str = "image/png") -> str:
    """The real MIME type from the file's magic bytes (PNG, JPEG, WebP, GIF); ``default`` otherwise."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    return default


def answer_about_figure(
    llm: Optional[LLMClient],
    question: str,
    figure: Figure,
    image_bytes: Optional[bytes],
    mime: Optional[str] = None,
    context: str = "",
    sources: Sequence[Source] = (),
    confidence: float = 0.0,
    *,
    language: Optional[str] = None,
) -> Answer:
    """Answer a question about one figure with the vision model, falling back to text, then to quotes."""
    if llm is None or not llm.configured:
        return _figure_extractive(question, figure, context, sources, confidence, NO_MODEL_NOTICE)
    prompt = _figure_prompt(question, figure, context)
    instruction = language_instruction(question, language)
    reply, vision_failure = _vision_reply(llm, prompt, image_bytes, mime, instruction)
    if reply:
        return Answer(
            f"About {figure_label(figure)}:\n\n{reply}",
            "vision",
            confidence,
            list(sources),
            figure=figure,
            question=question,
        )
    return _answer_from_figure_text(
        llm, question, figure, context, sources, confidence, prompt, instruction, vision_failure
    )


def _vision_reply(
    llm: LLMClient, prompt: str, image_bytes: Optional[bytes], mime: Optional[str], instruction: str
) -> tuple[str, str]:
    """The vision model's answer (stripped), or "" and the reason there is none."""
    if not image_bytes:
        return "", "the figure's image is missing"
    real_mime = detect_image_mime(image_bytes, default=mime or "image/png")
    try:
        reply = llm.vision(
            prompt, image_bytes, real_mime, system=FIGURE_SYSTEM_PROMPT.format(language_instruction=instruction)
        )
    except LLMError as exc:
        logger.warning("vision answer failed, answering from the figure's text: %s", exc)
        return "", _vision_failure_reason(exc)
    if reply.strip():
        return reply.strip(), ""
    return "", "the vision model returned an empty answer"


def _answer_from_figure_text(
    llm: LLMClient,
    question: str,
    figure: Figure,
    context: str,
    sources: Sequence[Source],
    confidence: float,
    prompt: str,
    instruction: str,
    vision_failure: str,
) -> Answer:
    """The text model on the figure's caption and context; quotes if it fails too."""
    notice = (
        f"The vision model could not read the image ({vision_failure}); this answer uses the figure's "
        f"caption and the text around it only."
    )
    messages = [
        {"role": "system", "content": FIGURE_TEXT_SYSTEM_PROMPT.format(language_instruction=instruction)},
        {"role": "user", "content": prompt},
    ]
    try:
        reply = llm.chat(messages)
    except LLMError as exc:
        return _figure_extractive(
            question,
            figure,
            context,
            sources,
            confidence,
            f"{notice} The text model failed too ({str(exc).rstrip('.')}), so this answer quotes the document.",
        )
    return Answer(
        f"About {figure_label(figure)}:\n\n_{notice}_\n\n{reply.strip()}",
        "vision-fallback",
        confidence,
        list(sources),
        figure=figure,
        notice=notice,
        question=question,
    )


def _figure_prompt(question: str, figure: Figure, context: str) -> str:
    return (
        f"Document: {figure.file}, page {figure.page}\n"
        f"Figure caption: {figure.caption.strip() or '(none)'}\n\n"
        f"Context from the document:\n{context.strip() or '(none)'}\n\n"
        f"Question about this figure: {question.strip()}"
    )


def _vision_failure_reason(exc: LLMError) -> str:
    message = str(exc)
    status = getattr(exc, "status", None)
    if status == 400 and re.search(r"image|vision|multi-?modal|图片|图像", message, re.I):
        return "the model does not accept images"
    return message.rstrip(".")


def _figure_extractive(
    question: str, figure: Figure, context: str, sources: Sequence[Source], confidence: float, notice: str
) -> Answer:
    excerpt = best_excerpt(question, context, max_chars=900) if context.strip() else ""
    parts = [f"About {figure_label(figure)}:", f"_{notice}_"]
    if figure.caption.strip():
        parts.append(f"**Caption:** {figure.caption.strip()}")
    if excerpt:
        parts.append("> " + excerpt)
    parts.extend(
        format_passage(n, s, best_excerpt(question, s.text))
        for n, s in enumerate(list(sources)[:EXTRACTIVE_PASSAGES], start=1)
    )
    return Answer(
        "\n\n".join(parts), "extractive", confidence, list(sources), figure=figure, notice=notice, question=question
    )
