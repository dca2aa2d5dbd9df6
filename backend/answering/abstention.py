"""An answer that abstains: when the confidence is below ``confidence.abstain_below`` the documents most
likely do not hold the answer, so the model is not asked to write one from look-alike passages; the user
sees that plainly, with the closest passages marked as closest, not as an answer."""

from __future__ import annotations

from backend.answering.extractive import extractive_answer
from backend.types import Answer, SearchResult

ABSTAINED = "abstained"


def abstention_notice(confidence: float, missing_document: str = "") -> str:
    """One line, in English like every notice (the web page shows it in its own language)."""
    if missing_document:
        return (
            f'No document named "{missing_document}" was searched, so the answer to this question is not in '
            f"your documents (confidence {confidence:.0f}%). The closest passages follow: closest, not an answer."
        )
    return (
        f"Your documents do not seem to hold the answer to this question (confidence {confidence:.0f}%). "
        "The closest passages follow: closest, not an answer."
    )


def abstained_answer(question: str, result: SearchResult, searched_question: str) -> Answer:
    """The closest passages quoted under the abstention notice; mode ``abstained``, no model call."""
    notice = abstention_notice(result.confidence, result.missing_document)
    answer = extractive_answer(question, result.sources, result.confidence, notice, searched_question=searched_question)
    answer.mode, answer.abstained, answer.searched_in = ABSTAINED, True, result.searched_in
    return answer
