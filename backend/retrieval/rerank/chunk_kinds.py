"""How a chunk's kind weighs for a question: a bibliography entry is rarely what a question is after.

A question about a method shares its words with the titles in the reference list ("… short text
clustering …"), so reference chunks are demoted, unless the question asks for references or publications:
then they are what it is after, and lead the prose that cites them by number ("Fearnley [6] and [7]").
"""

from __future__ import annotations

import re

_ASKS_FOR_REFERENCES = re.compile(
    r"\b(?:references?|bibliograph\w*|cit(?:e|es|ed|ing|ation|ations)|publications?|published|journals?|"
    r"proceedings|preprints?)\b|参考文献|文献|引用|出版",
    re.IGNORECASE,
)


def asks_for_references(question: str) -> bool:
    return bool(_ASKS_FOR_REFERENCES.search(question))


def kind_factor(question: str, kind: str, references: float, references_asked: float = 1.0) -> float:
    """The share of its relevance a chunk of this kind keeps for the question (1.0: no change);
    ``references``: what a reference-list chunk keeps (``rerank.references``), ``references_asked``: what it
    gets when the question asks for references (``rerank.references_asked``)."""
    if kind == "references":
        return references_asked if asks_for_references(question) else references
    return 1.0
