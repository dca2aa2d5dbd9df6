"""A document's title said in a question: the runs of its words that name it, and the words around a name."""

from __future__ import annotations

import functools
import math
import re
from pathlib import PurePath
from typing import Sequence

from backend.retrieval.scope.catalog import WORD, CatalogEntry
from backend.text import ENGLISH_STOPWORDS

_NAME_WORDS = r"(?:document|paper|article|file|pdf|report|study|manuscript|titled|entitled|named|called)"
_NAMED_BEFORE = re.compile(rf"(?:\b{_NAME_WORDS}\s*[:“\"'‘「《(]*|[“\"‘「《])\s*$", re.IGNORECASE)
_NAMED_AFTER = re.compile(rf"^\s*(?:[”\"’」》]|\.pdf\b|{_NAME_WORDS}\b)", re.IGNORECASE)
# A title phrase names a document when it is this long in content words (and says something the other
# documents' names do not).
_MIN_PHRASE_WORDS = 2
_MIN_TITLE_SHARE = 0.5
_NAME_WORD_MIN_CHARS = 3


def is_framed(text: str, start: int, end: int) -> bool:
    """Whether a name is said as a name: quoted, or next to "paper", "document", "titled", ".pdf"."""
    return bool(_NAMED_BEFORE.search(text[max(0, start - 40) : start]) or _NAMED_AFTER.match(text[end : end + 40]))


def by_title(text: str, catalog: Sequence[CatalogEntry]):
    """The longest run of a title's words the question repeats, if it is distinctive enough to be a name."""
    words = _question_words(text)
    asked = {w for w, _, _ in words if is_content(w)}
    document_frequency = _title_word_frequency(tuple(catalog))
    best_score, best = 0.0, []
    for entry in catalog:
        for number, title in enumerate(entry.titles):
            if asked.isdisjoint(_words_of(title)):
                continue  # most titles share no word with the question: skip the run search
            # A first page's lines also hold section, company and journal names: taken from there, a title
            # counts only when the question says it as a name, and never as a single word.
            found = _title_run(words, title, document_frequency, len(catalog), single_word=number == 0)
            if found and number > 0 and not is_framed(text, *found[1]):
                found = None
            if found and found[0] > best_score + 1e-9:
                best_score, best = found[0], [(entry, found[1])]
            elif found and abs(found[0] - best_score) <= 1e-9 and entry not in [b[0] for b in best]:
                best.append((entry, found[1]))
    if not best:
        return None
    return [e for e, _ in best], [span for _, span in best]


def title_spans(text: str, entries: Sequence[CatalogEntry]) -> list[tuple[int, int]]:
    """Every run of the named documents' titles the question says, beside their id or file name or in the
    question itself: searched as a whole, a title's words pull the title page to the top."""
    words = _question_words(text)
    frequency = _title_word_frequency(tuple(entries))
    return [
        run
        for entry in entries
        for number, title in enumerate(entry.titles)
        for _, run in _title_runs(words, title, frequency, len(entries), single_word=number == 0)
    ]


def _question_words(text: str) -> list[tuple[str, tuple[int, int], str]]:
    """Each word of a question: folded, where it stands, and as written."""
    return [(m.group().casefold(), m.span(), m.group()) for m in WORD.finditer(text)]


@functools.lru_cache(maxsize=64)  # a question asks it of each knowledge base; the catalogs seldom change
def _title_word_frequency(catalog: tuple[CatalogEntry, ...]) -> dict[str, int]:
    frequency: dict[str, int] = {}
    for entry in catalog:
        for word in _title_words(entry):
            frequency[word] = frequency.get(word, 0) + 1
    return frequency


# Per document, not per question: at 1,500 documents these took most of a question's time.
@functools.lru_cache(maxsize=1 << 16)
def file_stem(file: str) -> str:
    return PurePath(file).stem.casefold()


@functools.lru_cache(maxsize=1 << 16)
def _title_words(entry: CatalogEntry) -> frozenset[str]:
    return frozenset().union(*map(_words_of, entry.titles))


@functools.lru_cache(maxsize=1 << 16)
def _words_of(title: str) -> frozenset[str]:
    return frozenset(w.casefold() for w in WORD.findall(title))


def _title_run(words, title: str, frequency: dict[str, int], documents: int, single_word: bool = True):
    """(score, span) of the best run of ``title``'s words that the question repeats in the same order and
    that is a name: long and distinctive enough, or one coined word (LCSTS); None if there is none."""
    return max(_title_runs(words, title, frequency, documents, single_word), default=None, key=lambda run: run[0])


def _title_runs(words, title: str, frequency: dict[str, int], documents: int, single_word: bool = True):
    """(score, span) of every run of ``title``'s words that the question repeats and that is a name."""
    title_words = [w.casefold() for w in WORD.findall(title)]
    content = [w for w in title_words if is_content(w)]
    for start, end in _common_runs(words, title_words) if content else []:
        run = words[start:end]
        run_content = [w for w, _, _ in run if is_content(w)]
        rare = any(frequency.get(w, 0) == 1 for w in run_content)
        names_a_thing = single_word and len(run) == 1 and rare and looks_like_a_name(run[0][2])
        long_enough = (
            rare and len(run_content) >= _MIN_PHRASE_WORDS and len(run_content) >= _MIN_TITLE_SHARE * len(content)
        )
        if names_a_thing or long_enough:
            score = sum(math.log(1 + documents / frequency.get(w, 1)) for w in run_content)
            yield score, (run[0][1][0], run[-1][1][1])


def _common_runs(words, title_words: list[str]) -> list[tuple[int, int]]:
    """Maximal runs words[start:end] equal to a stretch of ``title_words``."""
    runs = set()
    for start in range(len(words)):
        for offset in range(len(title_words)):
            if start and offset and words[start - 1][0] == title_words[offset - 1]:
                continue  # not maximal: the run starting one word earlier holds it
            length = 0
            while (
                start + length < len(words)
                and offset + length < len(title_words)
                and words[start + length][0] == title_words[offset + length]
            ):
                length += 1
            if length:
                runs.add((start, start + length))
    return sorted(runs)


def is_content(word: str) -> bool:
    return len(word) >= 2 and word not in ENGLISH_STOPWORDS and not word.isdigit()


def looks_like_a_name(word: str) -> bool:
    """A coined name or acronym as written in the question: LCSTS, StruClus, BERT (not "Clustering")."""
    capitals = sum(ch.isupper() for ch in word)
    return len(word) >= _NAME_WORD_MIN_CHARS and (capitals >= 2 or (capitals == 1 and not word[0].isupper()))
