"""Questions that name their document: find the document, search only there, rank by the rest.

People ask "…in the acknowledgments of document "1203.2923v2 - Disentangling Clustering Effects in Jet
Algorithms.pdf"" or "in the LCSTS paper …". Searched as a whole, the name's words pull the title page to the
top. So the name (file name, arXiv id, title, or a distinctive part of the title) is found here, the search is
limited to that document, and only the rest of the question is scored for the page. A page the question
names ("(P20)", "on page 5", "第3页") is put first within that document.
"""

from __future__ import annotations

import functools
import math
import re
import threading
import unicodedata
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import TYPE_CHECKING, Optional, Sequence

from backend.store.base import SearchFilter
from backend.text import ENGLISH_STOPWORDS
from backend.types import Source

if TYPE_CHECKING:
    from backend.knowledge_bases.open_kb import OpenKB

_ARXIV_ID = re.compile(r"(?<![\d.])(\d{4}\.\d{4,5})(v\d+)?(?![\d])")
_OLD_ARXIV_ID = re.compile(r"\b([a-z\-]+(?:\.[A-Z]{2})?/\d{7})(v\d+)?\b")
_WORD = re.compile(r"\w+(?:[-'’]\w+)*")
_PAGE_HINTS = (
    re.compile(r"\(\s*P\.?\s*(\d{1,4})\s*\)"),
    re.compile(r"\b(?:on|at|in|from|of)?\s*(?:the\s+)?pages?\s+(\d{1,4})\b", re.IGNORECASE),
    re.compile(r"\bp\.\s*(\d{1,4})\b"),
    re.compile(r"\b(?:on|at|in|from)\s+P(\d{1,4})\b"),
    re.compile(r"第\s*(\d{1,4})\s*页"),
)
# Words that frame a name ("in the document titled …", "… paper") and go with it when it is cut out.
_FRAME_BEFORE = re.compile(
    r"(?:\b(?:as\s+)?(?:described|discussed|mentioned|presented|explained|stated|shown|given|defined|reported|"
    r"proposed|introduced|outlined|noted|detailed)\s+)?"
    r"(?:\b(?:in|from|of|by|according to|within|for|about)\s+)?(?:the\s+)?"
    r"(?:\b(?:document|paper|article|file|pdf|report|study|work|text|manuscript)s?\s*)?"
    r"(?:\b(?:titled|entitled|named|called)\s*)?[:\s“\"'‘「《(]*$",
    re.IGNORECASE,
)
_FRAME_AFTER = re.compile(
    r"^(?:[\s”\"'’」》)]|\.pdf\b|\(\s*P\.?\s*\d{1,4}\s*\))*"
    r"(?:(?:document|paper|article|file|pdf|report|study)\b)?",
    re.IGNORECASE,
)
_NAME_WORDS = r"(?:document|paper|article|file|pdf|report|study|manuscript|titled|entitled|named|called)"
_NAMED_BEFORE = re.compile(rf"(?:\b{_NAME_WORDS}\s*[:“\"'‘「《(]*|[“\"‘「《])\s*$", re.IGNORECASE)
_NAMED_AFTER = re.compile(rf"^\s*(?:[”\"’」》]|\.pdf\b|{_NAME_WORDS}\b)", re.IGNORECASE)
# A title phrase names a document when it is this long in content words (and says something the other
# documents' names do not).
_MIN_PHRASE_WORDS = 2
_MIN_TITLE_SHARE = 0.5
_NAME_WORD_MIN_CHARS = 3


@dataclass(frozen=True)
class CatalogEntry:
    """What one document can be called: its file name, its arXiv id (if any), the title its file name
    gives, and title-like lines from the top of its first page."""

    doc_id: str
    file: str
    arxiv_ids: tuple[str, ...] = ()
    titles: tuple[str, ...] = ()  # [0]: from the file name; the rest: from the first page


@dataclass
class Scope:
    """The documents a question names, the question without the name, and the pages it names."""

    doc_ids: list[str]
    files: list[str]
    rest: str
    pages: list[int] = field(default_factory=list)
    reason: str = ""  # "file name", "arXiv id", "title"

    def label(self) -> str:
        """ "searched in: …" as the UI, the CLI and the API show it."""
        pages = f" (p. {', '.join(str(p) for p in self.pages)})" if self.pages else ""
        return ", ".join(self.files) + pages


def catalog_entry(doc_id: str, file: str, first_page: str = "") -> CatalogEntry:
    """Names of a document from its file name and the top of its first page."""
    stem = PurePath(file).stem
    ids = {m.group(1) for m in _ARXIV_ID.finditer(stem)} | {m.group(1) for m in _OLD_ARXIV_ID.finditer(stem)}
    head = first_page[:3000]
    ids |= {m.group(1) for m in re.finditer(r"arXiv:\s*(\d{4}\.\d{4,5})", head)}
    titles = [re.sub(r"[_\s]+", " ", _ARXIV_ID.sub("", stem)).strip(" -–_")]
    titles += [line.strip() for line in head.splitlines()[:8] if _looks_like_a_title(line)][:2]
    return CatalogEntry(doc_id, file, tuple(sorted(ids)), tuple(t for t in titles if t))


def _looks_like_a_title(line: str) -> bool:
    """A heading line: 3-15 words, mostly capitalised (or Chinese), not ending like a sentence."""
    words = _WORD.findall(line)
    if not 3 <= len(words) <= 15 or line.rstrip().endswith((".", ",", ";", ":", "。", "，")):
        return False
    capitalised = sum(1 for w in words if w[0].isupper() or not w[0].isascii())
    content = sum(1 for w in words if w.casefold() not in ENGLISH_STOPWORDS)
    return capitalised >= max(2, 0.8 * content)


def find_scope(question: str, catalog: Sequence[CatalogEntry]) -> Optional[Scope]:
    """The document(s) the question names, or None. Only names that single out documents count."""
    if not question.strip() or not catalog:
        return None
    text = unicodedata.normalize("NFKC", question)
    for finder, reason in ((_by_file_name, "file name"), (_by_arxiv_id, "arXiv id"), (_by_title, "title")):
        found = finder(text, catalog)
        if found:
            entries, spans = found
            if reason != "title":  # the title beside an id or file name goes too ("Strong Consistency … 1301.0676v5")
                spans = spans + _title_spans(text, entries)
            rest, pages = _rest_of_question(text, spans)
            if not pages and _about_the_whole(rest):  # "Summarise 1308.3383v2": its title and abstract answer
                rest = " ".join(dict.fromkeys(title for e in entries for title in e.titles))
            return Scope([e.doc_id for e in entries], [e.file for e in entries], rest, pages, reason)
    return None


# What a question about a document as a whole says besides its name ("What is …?", "Summarise …", "这篇论文讲了什么").
_ABOUT_THE_WHOLE = frozenset(
    "what whats describe described description explain summarise summarize summary sum up overview tell me "
    "about main idea ideas key point points paper document article report work study contribution contributions "
    "finding findings topic topics abstract please give brief briefly short outline gist content contents say "
    "says discuss discusses cover covers purpose goal goals aim aims".split()
)
_ABOUT_THE_WHOLE_ZH = re.compile(
    r"这篇|该|本|此|论文|文章|文档|文件|报告|讲了|讲|说了|说|介绍|总结|概括|概述|摘要|主要|内容|是什么|什么|关于|请|一下|简要|简单|的|了|吗|呢"
)


def _about_the_whole(rest: str) -> bool:
    """Whether what is left of a question, its document's name cut, asks about nothing in particular."""
    words = [w.casefold() for w in _WORD.findall(_ABOUT_THE_WHOLE_ZH.sub(" ", rest))]
    return not any(_is_content(w) and w not in _ABOUT_THE_WHOLE for w in words)


def _is_framed(text: str, start: int, end: int) -> bool:
    """Whether a name is said as a name: quoted, or next to "paper", "document", "titled", ".pdf"."""
    return bool(_NAMED_BEFORE.search(text[max(0, start - 40) : start]) or _NAMED_AFTER.match(text[end : end + 40]))


def _merged(spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping spans (a title inside a file name) as one."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def page_hints(question: str) -> list[int]:
    """Pages a question names: "(P20)", "on page 5", "p. 7", "第3页"."""
    pages = []
    for pattern in _PAGE_HINTS:
        pages += [int(m.group(1)) for m in pattern.finditer(question)]
    return sorted({p for p in pages if p > 0})


def _by_file_name(text: str, catalog: Sequence[CatalogEntry]):
    lowered = text.casefold()
    best: list[tuple[int, int, CatalogEntry]] = []
    for entry in catalog:
        stem = _file_stem(entry.file)
        if len(stem) < 4 or stem not in lowered:  # "a.pdf" would be found in every other question;
            continue  # the substring test first: a regex per document and question took 1.9 s at 1,500 documents
        for match in re.finditer(rf"(?<!\w){re.escape(stem)}(?!\w)", lowered):
            start, end = match.span()
            # a file called after one plain word ("report.pdf") is named only as a file or in quotes
            if stem.isalpha() and not (_looks_like_a_name(text[start:end]) or _is_framed(text, start, end)):
                continue
            best.append((start, end, entry))
            break
    if not best:
        return None
    longest = max(end - start for start, end, _ in best)
    chosen = [b for b in best if b[1] - b[0] == longest]
    return [e for _, _, e in chosen], [(s, t) for s, t, _ in chosen]


def _by_arxiv_id(text: str, catalog: Sequence[CatalogEntry]):
    entries, spans = [], []
    for pattern in (_ARXIV_ID, _OLD_ARXIV_ID):
        for match in pattern.finditer(text):
            named = [e for e in catalog if match.group(1) in e.arxiv_ids]
            entries += [e for e in named if e not in entries]
            if named:
                spans.append(match.span())
    return (entries, spans) if entries else None


def _by_title(text: str, catalog: Sequence[CatalogEntry]):
    """The longest run of a title's words the question repeats, if it is distinctive enough to be a name."""
    words = [(m.group().casefold(), m.span(), m.group()) for m in _WORD.finditer(text)]
    asked = {w for w, _, _ in words if _is_content(w)}
    document_frequency = _title_word_frequency(tuple(catalog))
    best_score, best = 0.0, []
    for entry in catalog:
        for number, title in enumerate(entry.titles):
            if asked.isdisjoint(_words_of(title)):
                continue  # most titles share no word with the question: skip the run search
            # A first page's lines also hold section, company and journal names: taken from there, a title
            # counts only when the question says it as a name, and never as a single word.
            found = _title_run(words, title, document_frequency, len(catalog), single_word=number == 0)
            if found and number > 0 and not _is_framed(text, *found[1]):
                found = None
            if found and found[0] > best_score + 1e-9:
                best_score, best = found[0], [(entry, found[1])]
            elif found and abs(found[0] - best_score) <= 1e-9 and entry not in [b[0] for b in best]:
                best.append((entry, found[1]))
    if not best:
        return None
    return [e for e, _ in best], [span for _, span in best]


def _title_spans(text: str, entries: Sequence[CatalogEntry]) -> list[tuple[int, int]]:
    """Every run of the named documents' titles the question says, beside their id or file name or in the
    question itself: searched as a whole, a title's words pull the title page to the top."""
    words = [(m.group().casefold(), m.span(), m.group()) for m in _WORD.finditer(text)]
    frequency = _title_word_frequency(tuple(entries))
    return [
        run
        for entry in entries
        for number, title in enumerate(entry.titles)
        for _, run in _title_runs(words, title, frequency, len(entries), single_word=number == 0)
    ]


@functools.lru_cache(maxsize=64)  # a question asks it of each knowledge base; the catalogs seldom change
def _title_word_frequency(catalog: tuple[CatalogEntry, ...]) -> dict[str, int]:
    frequency: dict[str, int] = {}
    for entry in catalog:
        for word in _title_words(entry):
            frequency[word] = frequency.get(word, 0) + 1
    return frequency


# Per document, not per question: at 1,500 documents these took most of a question's time.
@functools.lru_cache(maxsize=1 << 16)
def _file_stem(file: str) -> str:
    return PurePath(file).stem.casefold()


@functools.lru_cache(maxsize=1 << 16)
def _title_words(entry: CatalogEntry) -> frozenset[str]:
    return frozenset().union(*map(_words_of, entry.titles))


@functools.lru_cache(maxsize=1 << 16)
def _words_of(title: str) -> frozenset[str]:
    return frozenset(w.casefold() for w in _WORD.findall(title))


def _title_run(words, title: str, frequency: dict[str, int], documents: int, single_word: bool = True):
    """(score, span) of the best run of ``title``'s words that the question repeats in the same order and
    that is a name: long and distinctive enough, or one coined word (LCSTS); None if there is none."""
    return max(_title_runs(words, title, frequency, documents, single_word), default=None, key=lambda run: run[0])


def _title_runs(words, title: str, frequency: dict[str, int], documents: int, single_word: bool = True):
    """(score, span) of every run of ``title``'s words that the question repeats and that is a name."""
    title_words = [w.casefold() for w in _WORD.findall(title)]
    content = [w for w in title_words if _is_content(w)]
    for start, end in _common_runs(words, title_words) if content else []:
        run = words[start:end]
        run_content = [w for w, _, _ in run if _is_content(w)]
        rare = any(frequency.get(w, 0) == 1 for w in run_content)
        names_a_thing = single_word and len(run) == 1 and rare and _looks_like_a_name(run[0][2])
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


def _is_content(word: str) -> bool:
    return len(word) >= 2 and word not in ENGLISH_STOPWORDS and not word.isdigit()


def _looks_like_a_name(word: str) -> bool:
    """A coined name or acronym as written in the question: LCSTS, StruClus, BERT (not "Clustering")."""
    capitals = sum(ch.isupper() for ch in word)
    return len(word) >= _NAME_WORD_MIN_CHARS and (capitals >= 2 or (capitals == 1 and not word[0].isupper()))


def _rest_of_question(text: str, spans: Sequence[tuple[int, int]]) -> tuple[str, list[int]]:
    """The question without the named document(s) and the words that framed them, and the pages it names."""
    pages = page_hints(text)
    for start, end in reversed(_merged(spans)):
        before = _FRAME_BEFORE.sub("", text[:start])
        after = _FRAME_AFTER.sub("", text[end:])
        text = before.rstrip() + " " + after.lstrip()
    for pattern in _PAGE_HINTS:
        text = pattern.sub(" ", text)
    rest = re.sub(r"\s+", " ", text).strip(" ,;:")
    rest = re.sub(r"\s+([?.!,;:])", r"\1", rest)
    return rest, pages


_QUOTED_PDF = re.compile(r"[\"“”'‘’「『《]([^\"“”'‘’「」『』《》\n]{1,200}?\.pdf)[\"“”'‘’」』》]", re.IGNORECASE)
_BARE_PDF = re.compile(r"(?<![\w.\-])([\w.\-]{1,120}\.pdf)\b", re.IGNORECASE)


def named_file(question: str) -> str:
    """A PDF's file name the question gives ("… in the document "1506.05865v4 - LCSTS.pdf"?"), or "": when
    no document of the library answers to it, the user asks about one that is not there."""
    text = unicodedata.normalize("NFKC", question)
    found = _QUOTED_PDF.search(text) or _BARE_PDF.search(text)
    return " ".join(found.group(1).split()) if found else ""


def names_another(file: str, scope: Scope) -> bool:
    """Whether the file name a question gives carries an arXiv id none of the scoped documents has: its
    title's words found another document ("… of Dense Graphs" for "… of Streaming Graphs")."""
    given = {m.group(1) for m in _ARXIV_ID.finditer(file)}
    scoped = {m.group(1) for name in scope.files for m in _ARXIV_ID.finditer(name)}
    return bool(given) and not given & scoped


def scope_for(question: str, catalog: Sequence[CatalogEntry], chosen: Sequence[str] = ()) -> Optional[Scope]:
    """The scope of a question: the document(s) it names, or, when the user chose documents (``chosen``,
    doc ids), the one(s) of them it names, else all of them with the pages the question names. None:
    search everything as asked."""
    if not chosen:
        return find_scope(question, catalog)
    entries = [e for e in catalog if e.doc_id in chosen]
    scope = find_scope(question, entries)
    if scope is None and entries and page_hints(question):
        rest, pages = _rest_of_question(unicodedata.normalize("NFKC", question), [])
        scope = Scope([e.doc_id for e in entries], [e.file for e in entries], rest, pages, "chosen")
    return scope


def narrowed(where: SearchFilter, scope: Optional[Scope]) -> SearchFilter:
    if scope is None:
        return where
    return SearchFilter(include_doc_ids=list(scope.doc_ids), exclude_doc_ids=where.exclude_doc_ids)


def on_named_pages(source: Source, scope: Optional[Scope]) -> bool:
    return scope is not None and any(source.page <= p <= source.page_end for p in scope.pages)


def named_pages_first(sources: list[Source], scope: Optional[Scope]) -> list[Source]:
    """Sources on a page the question names come first (in their order), then the others."""
    if scope is None or not scope.pages:
        return sources
    return sorted(sources, key=lambda s: not on_named_pages(s, scope))


_Cached = tuple[int, tuple[str, ...], list["CatalogEntry"]]  # registry version, complete doc ids, catalog


class Catalogs:
    """The catalog of each knowledge base, rebuilt when its complete documents change."""

    def __init__(self) -> None:
        self._cached: dict[str, _Cached] = {}
        self._lock = threading.Lock()

    def get(self, collection: str, registry, excluded: Sequence[str] = ()) -> list[CatalogEntry]:
        version = registry.version()  # unchanged: nothing to read (a question asks it of each knowledge base)
        with self._lock:
            cached = self._cached.get(collection)
        if cached is None or cached[0] != version:
            cached = self._refreshed(registry, version, cached)
            with self._lock:
                self._cached[collection] = cached
        leaving_out = set(excluded)
        return [e for e in cached[2] if e.doc_id not in leaving_out]

    @staticmethod
    def _refreshed(registry, version: int, cached: Optional[_Cached]) -> _Cached:
        """The catalog after the registry changed: rebuilt only when its complete documents did (an upload
        commits often; the first pages of 1,500 documents take 1-2 s to read)."""
        documents = registry.documents(status="complete")
        key = tuple(sorted(d.doc_id for d in documents))
        if cached is not None and cached[1] == key:
            return (version, key, cached[2])
        first = registry.first_pages()
        return (version, key, [catalog_entry(d.doc_id, d.file, first.get(d.doc_id, "")) for d in documents])


def search_scope(
    kb: OpenKB, catalogs: Catalogs, question: str, docs: Sequence[str], exclude: Sequence[str], said: Optional[str]
) -> tuple[SearchFilter, Optional[Scope]]:
    """Where a search looks: the chosen documents (file names), or every complete one but the excluded;
    and the document(s) the question names. ``said``: for a model's rewrite of the question, what the
    user wrote (the question and the conversation); the rewrite is limited to a document only when the
    user named it there too."""
    include = list(dict.fromkeys(kb.find_document(doc).doc_id for doc in docs)) or None
    excluded = kb.registry.pending_ids() + [kb.find_document(name).doc_id for name in exclude]
    where = SearchFilter(include_doc_ids=include, exclude_doc_ids=excluded)
    catalog = catalogs.get(kb.collection, kb.registry, excluded)
    scope = scope_for(question, catalog, include or ())
    if scope is not None and scope.reason == "title" and names_another(named_file(question), scope):
        scope = None  # the file it names is another one (its id says so): a look-alike title must not narrow
    if scope is not None and said is not None and not _named_by_user(scope, scope_for(said, catalog)):
        scope = None  # the model named that document, not the user: it must not narrow the search
    return where, scope


def _named_by_user(scope: Scope, said_scope: Optional[Scope]) -> bool:
    """Every document the rewrite is limited to was named in what the user wrote."""
    return said_scope is not None and set(scope.doc_ids) <= set(said_scope.doc_ids)


def shared_scope(
    question: tuple[str, Optional[Scope]], rewrite: tuple[str, Optional[Scope]], catalog: Sequence[CatalogEntry]
) -> tuple[Optional[Scope], Optional[Scope]]:
    """The scopes of a question and of the model's rewrite of it, made one: the documents the question
    names, else those the rewrite names (and the user said). A rewrite that dropped the name searched every
    document, and its translation with it; now each query keeps only its own rest."""
    leading = question[1] or rewrite[1]
    if leading is None:
        return None, None
    return _within(leading, *question, catalog), _within(leading, *rewrite, catalog)


def _within(leading: Scope, text: str, own: Optional[Scope], catalog: Sequence[CatalogEntry]) -> Scope:
    """``leading``'s documents and pages, searched for ``text`` without the name it says (if it says one)."""
    if own is not None and own.doc_ids == leading.doc_ids:
        return own
    named = find_scope(text, [e for e in catalog if e.doc_id in leading.doc_ids])
    rest = named.rest if named else text
    return Scope(list(leading.doc_ids), list(leading.files), rest, list(leading.pages), leading.reason)
