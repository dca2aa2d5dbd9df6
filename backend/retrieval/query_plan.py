"""A question's plan across languages (Chinese <-> English): its language, anchors, bridge and translations.

Across languages only the multilingual dense model works as is: the question's words, its phrasing
(fuzzy match) and its names are not in the passage. So, for each candidate whose language differs from the
question's (mixed libraries are the normal case):

- the keyword search of the question counts only through what survives translation (numbers, Latin names,
  formulas, acronyms: the *anchors*), and a second keyword search runs on the question's words rendered in
  the other language by the bilingual term list (the *bridge*);
- the reranker scores keyword coverage through the bridge both ways, entities through the anchors, drops
  the fuzzy match, and leans on the semantic score (``backend.retrieval.rerank.crosslingual``);
- with a model configured, the model's translation of the question takes the question's place for the
  passages in the translation's language (it is searched and fused too).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Mapping, Optional, Sequence

from backend.retrieval.term_list import TermList, term_list
from backend.settings import RetrievalSettings
from backend.text import CHINESE_STOPWORDS, ENGLISH_STOPWORDS, HAN, normalize, query_terms, text_language, tokenizer

_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9+\-]*")
_ACRONYM = re.compile(r"^(?:[A-Z][A-Z0-9&\-]+|[A-Za-z]+\d[A-Za-z0-9]*)$")  # NFL, CO2, H2O, 4G


OTHER_LANGUAGE = {"zh": "en", "en": "zh"}


@dataclass(frozen=True)
class QuestionPlan:
    question: str
    lang: str  # "zh", "en" or "" (neither: numbers, formulas)
    anchors: tuple[str, ...] = ()  # normalised words that read the same in both languages
    bridge: tuple[tuple[str, tuple[str, ...]], ...] = ()  # question word -> its renderings, other language
    translations: Mapping[str, str] = field(default_factory=dict)  # language -> the model's translation

    @property
    def other(self) -> str:
        return OTHER_LANGUAGE.get(self.lang, "")

    def crosses(self, chunk_lang: str) -> bool:
        return bool(self.lang and chunk_lang and chunk_lang != self.lang)

    def question_for(self, chunk_lang: str) -> Optional[str]:
        """The text to score a passage in ``chunk_lang`` against, or None: across languages, no translation."""
        if not self.crosses(chunk_lang):
            return self.question
        return self.translations.get(chunk_lang)

    def bridge_query(self) -> str:
        """The keyword query for passages in the other language: rendered words and anchors."""
        words = [r for _, renderings in self.bridge for r in renderings] + list(self.anchors)
        return " ".join(dict.fromkeys(words))


def plan(question: str, queries: Sequence[str] = ()) -> QuestionPlan:
    """The question's language, anchors and bridge; ``queries``: the question and its model translations."""
    lang = text_language(question)
    translations: dict[str, str] = {}
    for text in queries[1:]:
        translated_lang = text_language(text)
        if translated_lang and translated_lang != lang:
            translations.setdefault(translated_lang, text)
    return QuestionPlan(question, lang, anchors(question, lang), _bridge(question, lang), translations)


_ZH_DECADE = re.compile(r"(\d{1,2})\s*世纪\s*(\d)0\s*年代")
_ZH_CENTURY = re.compile(r"(\d{1,2})\s*世纪")
_EN_DECADE = re.compile(r"\b(1\d|20)(\d)0s\b")
_EN_CENTURY = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)[ -]century", re.I)


def _dates(question: str, lang: str) -> list[str]:
    """Decades and centuries are written differently: 20世纪80年代 <-> 1980s, 19世纪 <-> 19th century."""
    if lang == "zh":
        found = [f"{int(c) - 1}{d}0" for c, d in _ZH_DECADE.findall(question)]
        return found + [f"{c}th" for c in _ZH_CENTURY.findall(question)]
    found = [f"{d}0年代" for _, d in _EN_DECADE.findall(question)]
    return found + [f"{c}世纪" for c in _EN_CENTURY.findall(question)]


@lru_cache(maxsize=4096)
def anchors(question: str, lang: str) -> tuple[str, ...]:
    """Numbers, acronyms and formulas; in a Chinese question every Latin word (names are kept in Latin)."""
    found = _dates(question, lang) + _NUMBER.findall(question)
    for word in _LATIN.findall(question):
        if lang == "zh" or _ACRONYM.match(word):
            lowered = word.lower()
            if lowered not in ENGLISH_STOPWORDS and (len(lowered) >= 2 or lowered.isdigit()):
                found.append(lowered)
    return tuple(dict.fromkeys(found))


@lru_cache(maxsize=4096)
def _bridge(question: str, lang: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    terms = term_list()
    if lang not in ("zh", "en") or terms is None:
        return ()
    if lang == "zh":
        words = _chinese_words(question, terms)
        rendered = [(word, terms.english(word) or _english_of_parts(word, terms)) for word in words]
    else:
        rendered = [(term, terms.chinese(term)) for term in query_terms(question) if term.isalpha()]
    return tuple((t, r) for t, r in rendered if r)


_HAN_RUN = re.compile(f"[{HAN}]+")
_LONGEST_ENTRY = 8  # characters: the term list keeps words of 2-8


def _chinese_words(question: str, terms: TermList) -> list[str]:
    """jieba's words of the question, consecutive ones joined where together they are an entry of the term
    list (不|平等 -> 不平等 inequality, 基辅|罗斯 -> 基辅罗斯 Kievan Rus): jieba cuts what it does not know."""
    words: list[str] = []
    for run in _HAN_RUN.findall(normalize(question)):
        pieces = tokenizer().lcut(run)
        start = 0
        while start < len(pieces):
            end = _longest_entry(pieces, start, terms)
            words.append("".join(pieces[start:end]))
            start = end
    return list(dict.fromkeys(w for w in words if len(w) >= 2 and w not in CHINESE_STOPWORDS))


def _english_of_parts(word: str, terms: TermList) -> tuple[str, ...]:
    """A word the list lacks (a compound, a name): the renderings of the longest entries it is made of,
    from the left (诺贝尔经济学奖 -> 诺贝尔 + 经济学, where two-character halves gave 诺贝 + 尔经 + 济学)."""
    found: list[str] = []
    start = 0
    while start < len(word) - 1:
        end = _longest_entry(list(word), start, terms)
        if end - start >= 2:
            found += terms.english(word[start:end])[:2]
        start = end
    return tuple(dict.fromkeys(found))


def _longest_entry(pieces: Sequence[str], start: int, terms: TermList) -> int:
    """Where the longest run of ``pieces`` from ``start`` that the term list has ends (start + 1: none)."""
    for end in range(len(pieces), start + 1, -1):
        joined = "".join(pieces[start:end])
        if len(joined) <= _LONGEST_ENTRY and terms.english(joined):
            return end
    return start + 1


# -- fusion across languages ----------------------------------------------------------------------


@dataclass
class KeywordRun:
    """One keyword search's hits and the language of its query; the bridge counts only in the other one.
    ``weights``: the RRF factors across languages (``retrieval.cross_keyword_factor``, ``bridge_weight``)."""

    lang: str
    hits: list = field(default_factory=list)
    bridge: bool = False
    weights: RetrievalSettings = field(default_factory=RetrievalSettings)

    def factor(self, chunk_lang: str) -> float:
        """How much a hit counts for a chunk: fully in its query's language, anchors-only elsewhere."""
        if self.bridge:
            return self.weights.bridge_weight if chunk_lang == self.lang else 0.0
        if not self.lang or not chunk_lang or self.lang == chunk_lang:
            return 1.0
        return self.weights.cross_keyword_factor

    def in_own_language(self, chunk_lang: str) -> bool:
        """Does the query's BM25 score measure the chunk fully (the question's words in the chunk's language)?"""
        return not self.bridge and (not self.lang or not chunk_lang or self.lang == chunk_lang)

    def item_weights(self) -> dict[str, float]:
        return {hit.row.id: self.factor(hit.row.lang) for hit in self.hits}


def keyword_queries(question_plan: QuestionPlan, queries: Sequence[str]) -> list[tuple[str, str, bool]]:
    """(query text, its language, is the bridge) for each keyword search to run. The bridge is left out
    when the model's translation into the other language is there: it does the same job better."""
    runs = [(q, text_language(q) or question_plan.lang, False) for q in queries]
    bridge = question_plan.bridge_query()
    if bridge and question_plan.other and question_plan.other not in question_plan.translations:
        runs.append((bridge, question_plan.other, True))
    return runs
