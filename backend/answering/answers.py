"""Answers from the model, streamed, falling back to quoting passages when there is no model or it fails."""

from __future__ import annotations

import logging
from typing import Iterator, Optional, Sequence

from backend.answering.abstention import abstained_answer
from backend.answering.citations import validate_citations
from backend.answering.extractive import NO_MODEL_NOTICE, NO_SOURCES_TEXT, extractive_answer
from backend.answering.formula_images import FormulaImage, with_formulas_read
from backend.answering.pacing import paced
from backend.answering.prompts import HistoryLike, build_prompt
from backend.errors import LLMError
from backend.llm.client import LLMClient, LLMCutOff
from backend.types import Answer, AnswerUpdate, SearchResult, Source

logger = logging.getLogger(__name__)


def answer_stream(
    llm: Optional[LLMClient],
    question: str,
    sources: Sequence[Source],
    confidence: float,
    history: HistoryLike = None,
    *,
    language: Optional[str] = None,
    searched_question: Optional[str] = None,
) -> Iterator[AnswerUpdate]:
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
        yield _final(
            extractive_answer(question, numbered, confidence, model_failed_notice(reason), searched_question=searched)
        )
        return
    answer = _llm_answer(text, numbered, confidence, searched)
    yield _final(_marked_cut_off(answer, cut_off.reason) if cut_off else answer)


def _marked_cut_off(answer: Answer, reason: str) -> Answer:
    """The text ends in "…" and the notice says the model's answer stops short."""
    notice = f"The model's answer was cut off ({reason}), so it may be incomplete."
    answer.answer = answer.answer.rstrip() + " …"
    answer.notice = f"{notice} {answer.notice}".strip()
    return answer


def answer_updates(
    llm: Optional[LLMClient],
    question: str,
    result: SearchResult,
    history: HistoryLike,
    searched_question: str,
    abstain_below: float = 0.0,
    formula_image: Optional[FormulaImage] = None,
) -> Iterator[AnswerUpdate]:
    """The updates of a question about the text: the sources found, each delta, then the final answer, which
    says where the search looked (``result.searched_in``). Below ``abstain_below`` it abstains without asking
    the model. ``formula_image``: where a source's drawn formulas are kept, read as LaTeX before the model
    gets them (``formula_images``); the sources come again once any is read."""
    abstains = result.abstains(abstain_below)
    yield AnswerUpdate(text="", sources=result.sources, confidence=result.confidence)
    if abstains:
        yield from whole_answer_updates(abstained_answer(question, result, searched_question))
        return
    if formula_image is not None and llm is not None and llm.configured:
        # after the sources are shown: reading a few formula images takes a vision call each
        given = llm.settings.llm.context_sources
        read = with_formulas_read(llm, result.sources[:given], formula_image)
        if any(a is not b for a, b in zip(read, result.sources)):
            result.sources = read + result.sources[given:]
            yield AnswerUpdate(text="", sources=result.sources, confidence=result.confidence)
    stream = answer_stream(
        llm, question, result.sources, result.confidence, history=history, searched_question=searched_question
    )
    for update in paced(stream):
        if update.done and update.answer is not None:
            update.answer.searched_in = result.searched_in
            yield update
        elif update.delta:
            yield update


def whole_answer_updates(answer: Answer) -> Iterator[AnswerUpdate]:
    """An answer that comes whole (a figure's): one delta, then the final update."""
    yield AnswerUpdate(text=answer.answer, delta=answer.answer)
    yield AnswerUpdate(text=answer.answer, done=True, answer=answer)


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
