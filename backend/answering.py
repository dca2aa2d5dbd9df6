"""Turning ranked sources into answers: prompts, citations, streaming, figures, summaries, fallbacks.

Pure logic on top of LLMClient; callers pass the sources, figures and text in (no database here).
Nothing here crashes on a model failure: the answer falls back to quoting the best passages, with a
one-line notice that says why. LaTeX is passed through exactly as the model or the document wrote it.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Optional, Sequence, Union

from backend.errors import LLMError
from backend.llm import LLMClient, LLMCutOff
from backend.text import REQUEST_WORDS, query_terms, question_language
from backend.types import Answer, Figure, Source

logger = logging.getLogger(__name__)

HistoryLike = Optional[Sequence[Union[dict[str, Any], Sequence[Any]]]]

MAX_SOURCE_CHARS = 2000  # per numbered source in the prompt
MAX_SOURCES_CHARS = 12000  # all sources together
MAX_HISTORY_MESSAGES = 6  # three turns
MAX_HISTORY_MESSAGE_CHARS = 1200
EXTRACTIVE_PASSAGES = 3
EXCERPT_CHARS = 420
SUMMARY_INPUT_CHARS = 12000

NO_MODEL_NOTICE = "No language model is configured, so this answer quotes the most relevant passages."
NO_SOURCES_TEXT = "The documents in this knowledge base contain no passage that matches the question."

ANSWER_SYSTEM_PROMPT = """You are DocLens, an assistant that answers questions about the user's PDF documents.
Answer only from the numbered sources you are given; do not use outside knowledge.
Cite the sources for every statement with their numbers in square brackets, like [1] or [2][3]. \
Only cite numbers that appear in the sources list.
If the sources do not contain the answer, say so plainly instead of guessing.
Keep mathematical formulas in LaTeX exactly as in the sources: $...$ inline and $$...$$ for display.
Be concise and use Markdown. {language_instruction}"""

CONDENSE_SYSTEM_PROMPT = """Rewrite the user's follow-up question as one standalone question that can be \
understood without the conversation (resolve "it", "this", "the second one", 它, 这个, ...). Keep the \
language of the follow-up question. Reply with the question only."""

FIGURE_SYSTEM_PROMPT = """You are DocLens, an assistant that explains figures and charts from the user's PDF \
documents. Describe what the figure shows as it relates to the question: axes, labels, trends, values. \
Use the caption and the surrounding document text to interpret it, and say when something cannot be read. \
Keep formulas in LaTeX ($...$, $$...$$). Be concise and use Markdown. {language_instruction}"""

FIGURE_TEXT_SYSTEM_PROMPT = """You are DocLens. The image of a figure could not be shown to you; answer the \
question about the figure from its caption and the document text around it only, and say what cannot be \
known without seeing the image. Keep formulas in LaTeX ($...$, $$...$$). Be concise and use Markdown. \
{language_instruction}"""

SUMMARY_SYSTEM_PROMPT = """You summarize documents faithfully, without adding anything that is not in the text."""


@dataclass
class AnswerUpdate:
    """One step of a streamed answer: the text so far; the last update carries the final Answer."""
    text: str
    delta: str = ""
    done: bool = False
    answer: Optional[Answer] = None


# ---------------------------------------------------------------- language


def language_instruction(question: str, language: Optional[str] = None) -> str:
    code = language or question_language(question)
    if code == "zh":
        return "Answer in Chinese (简体中文), the language of the question."
    if code == "en":
        return "Answer in the same language as the question (English if unsure)."
    return f"Answer in {code}."


# ---------------------------------------------------------------- prompts


def source_label(source: Source) -> str:
    pages = f"p. {source.page}" if source.page_end in (0, source.page) else f"pp. {source.page}–{source.page_end}"
    return f"{source.file}, {pages}"


def format_sources(sources: Sequence[Source]) -> str:
    """Sources numbered [1]..[n] with file and page, each capped so the prompt stays bounded."""
    blocks = []
    budget = MAX_SOURCES_CHARS
    for number, source in enumerate(sources, start=1):
        text = _clip(source.text.strip(), min(MAX_SOURCE_CHARS, max(200, budget)))
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
    return [{"role": m["role"], "content": _clip(m["content"], MAX_HISTORY_MESSAGE_CHARS)} for m in recent]


def build_prompt(question: str, sources: Sequence[Source], history: HistoryLike = None,
                 language: Optional[str] = None) -> list[dict[str, str]]:
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
    messages = [{"role": "system", "content": CONDENSE_SYSTEM_PROMPT},
                {"role": "user", "content": f"Conversation:\n{conversation}\n\nFollow-up question: {question}"}]
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


# ---------------------------------------------------------------- citations


_MATH = re.compile(r"\$\$.*?\$\$|\\\[.*?\\\]|\\\(.*?\\\)|\$[^$\n]+?\$", re.S)
_CITATION = re.compile(r"\[(\d{1,3}(?:\s*[,，、\-–]\s*\d{1,3})*)\](?!\()|【(\d{1,3})】")


def _outside_math(text: str) -> list[tuple[bool, str]]:
    """The text cut into (is_math, piece) so that citation handling never touches a formula."""
    pieces: list[tuple[bool, str]] = []
    position = 0
    for match in _MATH.finditer(text):
        if match.start() > position:
            pieces.append((False, text[position:match.start()]))
        pieces.append((True, match.group(0)))
        position = match.end()
    if position < len(text):
        pieces.append((False, text[position:]))
    return pieces


def _citation_numbers(match: re.Match[str]) -> list[int]:
    if match.group(2):
        return [int(match.group(2))]
    numbers: list[int] = []
    for part in re.split(r"\s*[,，、]\s*", match.group(1)):
        bounds = re.split(r"\s*[\-–]\s*", part)
        if len(bounds) == 2 and int(bounds[0]) <= int(bounds[1]) and int(bounds[1]) - int(bounds[0]) < 50:
            numbers.extend(range(int(bounds[0]), int(bounds[1]) + 1))
        else:
            numbers.extend(int(b) for b in bounds)
    return numbers


def extract_citations(text: str) -> list[int]:
    """Cited source numbers in order of first appearance: [1], [1, 2], [1-3], 【1】; formulas are ignored."""
    seen: list[int] = []
    for is_math, piece in _outside_math(text):
        if is_math:
            continue
        for match in _CITATION.finditer(piece):
            for number in _citation_numbers(match):
                if number not in seen:
                    seen.append(number)
    return seen


def validate_citations(text: str, source_count: int) -> tuple[str, list[int]]:
    """Remove citation numbers outside 1..source_count; returns the cleaned text and the removed numbers."""
    removed: list[int] = []

    def fix(match: re.Match[str]) -> str:
        numbers = _citation_numbers(match)
        valid = [n for n in numbers if 1 <= n <= source_count]
        removed.extend(n for n in numbers if n not in valid and n not in removed)
        if len(valid) == len(numbers):
            return match.group(0)
        return f"[{', '.join(str(n) for n in dict.fromkeys(valid))}]" if valid else ""

    pieces = [piece if is_math else _CITATION.sub(fix, piece) for is_math, piece in _outside_math(text)]
    cleaned = "".join(pieces)
    if removed:
        cleaned = re.sub(r"[ \t]+([.,;:!?。，；：！？])", r"\1", cleaned)  # "text [9]." -> "text."
    return cleaned, removed


# ---------------------------------------------------------------- answers


def answer_stream(llm: Optional[LLMClient], question: str, sources: Sequence[Source], confidence: float,
                  history: HistoryLike = None, *, language: Optional[str] = None,
                  searched_question: Optional[str] = None) -> Iterator[AnswerUpdate]:
    """Stream an answer from the model; the last update has done=True and the final Answer.

    Without a model, or when the model fails (even mid-answer), the final Answer quotes the best
    passages instead (mode "extractive") and its notice says why.
    """
    numbered = list(sources)
    if llm is not None:
        numbered = numbered[: llm.settings.llm.context_sources]
    searched = searched_question or question
    if not numbered:
        yield _final(Answer(NO_SOURCES_TEXT, "extractive", confidence, [], question=searched))
        return
    if llm is None or not llm.configured:
        yield _final(extractive_answer(question, numbered, confidence, NO_MODEL_NOTICE, searched_question=searched))
        return
    text = ""
    failure: Optional[LLMError] = None
    cut_off: Optional[LLMCutOff] = None
    try:
        for delta in llm.stream_chat(build_prompt(question, numbered, history, language)):
            text += delta
            yield AnswerUpdate(text=text, delta=delta)
    except LLMCutOff as exc:  # what arrived is kept, marked as incomplete
        cut_off = exc
    except LLMError as exc:
        failure = exc
    if failure is not None or not text.strip():
        reason = str(failure) if failure else "the model returned an empty answer"
        logger.warning("answering with the model failed, quoting passages instead: %s", reason)
        yield _final(extractive_answer(question, numbered, confidence, model_failed_notice(reason),
                                       searched_question=searched))
        return
    answer = _llm_answer(text, numbered, confidence, searched)
    yield _final(_marked_cut_off(answer, cut_off.reason) if cut_off else answer)


def _marked_cut_off(answer: Answer, reason: str) -> Answer:
    """The text ends in "…" and the notice says the model's answer stops short."""
    notice = f"The model's answer was cut off ({reason}), so it may be incomplete."
    answer.answer = answer.answer.rstrip() + " …"
    answer.notice = f"{notice} {answer.notice}".strip()
    return answer


def answer_question(llm: Optional[LLMClient], question: str, sources: Sequence[Source], confidence: float,
                    history: HistoryLike = None, **options: Any) -> Answer:
    """The final Answer of answer_stream, for callers that do not stream (CLI, API)."""
    final: Optional[Answer] = None
    for update in answer_stream(llm, question, sources, confidence, history, **options):
        final = update.answer or final
    assert final is not None  # answer_stream always ends with an Answer
    return final


def model_failed_notice(reason: str) -> str:
    return f"The language model failed ({reason.rstrip('.')}), so this answer quotes the most relevant passages."


def _final(answer: Answer) -> AnswerUpdate:
    return AnswerUpdate(text=answer.answer, done=True, answer=answer)


def _llm_answer(text: str, sources: list[Source], confidence: float, searched: str) -> Answer:
    cleaned, removed = validate_citations(text.strip(), len(sources))
    notice = ""
    if removed:
        listed = ", ".join(f"[{n}]" for n in removed)
        notice = f"The model cited sources that do not exist ({listed}); those citations were removed."
    return Answer(cleaned, "llm", confidence, sources, notice=notice, question=searched)


# ---------------------------------------------------------------- extractive answers


def split_sentences(text: str) -> list[str]:
    """Sentences of a passage (Chinese and Western punctuation), never cutting inside a formula."""
    formulas: list[str] = []

    def protect(match: re.Match[str]) -> str:
        formulas.append(match.group(0))
        return f"\x00{len(formulas) - 1}\x00"

    flat = _MATH.sub(protect, " ".join(text.split()))
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
        return _clip(" ".join(sentences), max_chars)
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
    return _clip(" ".join(pieces), max_chars)


def format_passage(number: int, source: Source, excerpt: str) -> str:
    quoted = "\n".join(f"> {line}" if line else ">" for line in excerpt.splitlines()) or "> …"
    return f"**[{number}] {source_label(source)}** · relevance {source.relevance:.0f}%\n{quoted}"


def extractive_answer(question: str, sources: Sequence[Source], confidence: float, reason: str = NO_MODEL_NOTICE,
                      *, searched_question: Optional[str] = None, max_passages: int = EXTRACTIVE_PASSAGES) -> Answer:
    """An answer made of the best passages (file, page, relevance, trimmed excerpt) and one notice line."""
    notice = reason or NO_MODEL_NOTICE
    numbered = list(sources)
    if not numbered:
        return Answer(f"_{notice}_\n\n{NO_SOURCES_TEXT}", "extractive", confidence, [], notice=notice,
                      question=searched_question or question)
    passages = [format_passage(n, s, best_excerpt(question, s.text))
                for n, s in enumerate(numbered[:max_passages], start=1)]
    text = f"_{notice}_\n\n" + "\n\n".join(passages)
    return Answer(text, "extractive", confidence, numbered, notice=notice, question=searched_question or question)


# ---------------------------------------------------------------- figures


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
    return f"{label} ({_clip(caption, caption_chars)})" if caption else label


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
            snippet = flat if len(flat) <= 600 else _window(flat, match.start(), match.end(), 280)
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
    """What the document says about a figure: caption, the text of its page, paragraphs that refer to it."""
    parts = []
    caption = _clip(" ".join((figure.caption or "").split()), 400)
    if caption:
        parts.append(f"Caption: {caption}")
    remaining = max(0, max_chars - len(caption) - 120)
    references = figure_references(figure, document_text, remaining // 2)
    page_budget = remaining - sum(len(r) + 3 for r in references)
    page = _clip(" ".join((page_text or "").split()), max(0, page_budget))
    if page:
        parts.append(f"Text of page {figure.page}:\n{page}")
    if references:
        parts.append("Passages that refer to this figure:\n" + "\n".join(f"- {r}" for r in references))
    return _clip("\n\n".join(parts), max_chars)


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


def answer_about_figure(llm: Optional[LLMClient], question: str, figure: Figure, image_bytes: Optional[bytes],
                        mime: Optional[str] = None, context: str = "", sources: Sequence[Source] = (),
                        confidence: float = 0.0, *, language: Optional[str] = None) -> Answer:
    """Answer a question about one figure with the vision model, falling back to text, then to quotes."""
    label = figure_label(figure)
    if llm is None or not llm.configured:
        return _figure_extractive(question, figure, context, sources, confidence, NO_MODEL_NOTICE)
    prompt = _figure_prompt(question, figure, context)
    instruction = language_instruction(question, language)
    vision_failure = "the figure's image is missing"
    if image_bytes:
        real_mime = detect_image_mime(image_bytes, default=mime or "image/png")
        try:
            reply = llm.vision(prompt, image_bytes, real_mime,
                               system=FIGURE_SYSTEM_PROMPT.format(language_instruction=instruction))
        except LLMError as exc:
            vision_failure = _vision_failure_reason(exc)
            logger.warning("vision answer failed, answering from the figure's text: %s", exc)
        else:
            if reply.strip():
                return Answer(f"About {label}:\n\n{reply.strip()}", "vision", confidence, list(sources),
                              figure=figure, question=question)
            vision_failure = "the vision model returned an empty answer"
    notice = (f"The vision model could not read the image ({vision_failure}); this answer uses the figure's "
              f"caption and the text around it only.")
    messages = [{"role": "system", "content": FIGURE_TEXT_SYSTEM_PROMPT.format(language_instruction=instruction)},
                {"role": "user", "content": prompt}]
    try:
        reply = llm.chat(messages)
    except LLMError as exc:
        return _figure_extractive(question, figure, context, sources, confidence,
                                  f"{notice} The text model failed too ({str(exc).rstrip('.')}), "
                                  f"so this answer quotes the document.")
    return Answer(f"About {label}:\n\n_{notice}_\n\n{reply.strip()}", "vision-fallback", confidence, list(sources),
                  figure=figure, notice=notice, question=question)


def _figure_prompt(question: str, figure: Figure, context: str) -> str:
    return (f"Document: {figure.file}, page {figure.page}\n"
            f"Figure caption: {figure.caption.strip() or '(none)'}\n\n"
            f"Context from the document:\n{context.strip() or '(none)'}\n\n"
            f"Question about this figure: {question.strip()}")


def _vision_failure_reason(exc: LLMError) -> str:
    message = str(exc)
    status = getattr(exc, "status", None)
    if status == 400 and re.search(r"image|vision|multi-?modal|图片|图像", message, re.I):
        return "the model does not accept images"
    return message.rstrip(".")


def _figure_extractive(question: str, figure: Figure, context: str, sources: Sequence[Source],
                       confidence: float, notice: str) -> Answer:
    excerpt = best_excerpt(question, context, max_chars=900) if context.strip() else ""
    parts = [f"About {figure_label(figure)}:", f"_{notice}_"]
    if figure.caption.strip():
        parts.append(f"**Caption:** {figure.caption.strip()}")
    if excerpt:
        parts.append("> " + excerpt)
    parts.extend(format_passage(n, s, best_excerpt(question, s.text))
                 for n, s in enumerate(list(sources)[:EXTRACTIVE_PASSAGES], start=1))
    return Answer("\n\n".join(parts), "extractive", confidence, list(sources), figure=figure, notice=notice,
                  question=question)


# ---------------------------------------------------------------- summaries


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
        piece = text if len(text) <= budget else _clip(text, budget)
        taken.append(piece)
        budget -= len(piece) + 2
    return taken


def summarize_document(llm: Optional[LLMClient], file: str, text_chunks: Sequence[str], *,
                       language: Optional[str] = None, max_chars: int = SUMMARY_INPUT_CHARS) -> str:
    """A concise Markdown summary (overview, key points, formulas in LaTeX). Raises LLMError when the model
    is missing or fails, so that the caller caches only real summaries and shows fallback_summary otherwise."""
    if llm is None or not llm.configured:
        raise LLMError("no language model is configured (set llm.base_url and llm.model)")
    sample = sample_text(text_chunks, max_chars)
    if not sample:
        raise LLMError(f"{file} has no text to summarize")
    user = (f"Summarize the document \"{file}\" in Markdown: start with a two or three sentence overview, then "
            f"3 to 7 bullet points with the key ideas, methods, results and numbers. Keep formulas in LaTeX "
            f"exactly as written ($...$ inline, $$...$$ display). "
            f"{_summary_language_instruction(sample[:2000], language)}\n\n"
            f"The text (excerpts from the start, middle and end when the document is long):\n\n{sample}")
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
    quoted = ["\n".join(f"> {line}" for line in _clip(" ".join(p.split()), 500).splitlines()) for p in passages]
    body = "\n\n".join(quoted) if quoted else "_The document has no extractable text._"
    return f"**{file}**\n\n_{why}, so here are the document's first passages instead of a summary._\n\n{body}"


# ---------------------------------------------------------------- text helpers


def _clip(text: str, limit: int) -> str:
    """At most ``limit`` characters, ending in "…" when cut; never cuts a formula in half."""
    if limit <= 0:
        return ""
    if len(text) <= limit:
        return text
    cut = max(0, limit - 1)
    for formula in _MATH.finditer(text):
        if formula.start() < cut < formula.end():
            cut = formula.start()  # a half formula would break the LaTeX rendering of the rest
            break
        if formula.start() >= cut:
            break
    return text[:cut].rstrip() + "…"


def _window(text: str, start: int, end: int, radius: int) -> str:
    left, right = max(0, start - radius), min(len(text), end + radius)
    return ("…" if left else "") + text[left:right].strip() + ("…" if right < len(text) else "")
