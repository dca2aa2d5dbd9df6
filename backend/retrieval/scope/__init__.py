"""Questions that name their document: find the document, search only there, rank by the rest.

People ask "…in the acknowledgments of document "1203.2923v2 - Disentangling Clustering Effects in Jet
Algorithms.pdf"" or "in the LCSTS paper …". Searched as a whole, the name's words pull the title page to the
top. So the name (file name, arXiv id, title, or a distinctive part of the title) is found here, the search is
limited to that document, and only the rest of the question is scored for the page. A page the question
names ("(P20)", "on page 5", "第3页") is put first within that document. A question about the document as a
whole ("Summarise 1308.3383v2", or "总结一下" with it picked) searches its titles.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional, Sequence

from backend.retrieval.scope.catalog import ARXIV_ID, OLD_ARXIV_ID, WORD, CatalogEntry, Catalogs
from backend.retrieval.scope.catalog import catalog_entry as catalog_entry  # part of the scope API
from backend.retrieval.scope.titles import (
    by_title,
    file_stem,
    is_content,
    is_framed,
    looks_like_a_name,
    title_spans,
)
from backend.store.base import SearchFilter
from backend.text import HAN_CHAR
from backend.types import Source

if TYPE_CHECKING:
    from backend.knowledge_bases.open_kb import OpenKB

_PAGE_HINTS = (
    re.compile(r"\(\s*P\.?\s*(\d{1,4})\s*\)"),
    re.compile(r"\b(?:on|at|in|from|of)?\s*(?:the\s+)?pages?\s+(\d{1,4})\b", re.IGNORECASE),
    re.compile(r"\bp\.\s*(\d{1,4})\b"),
    re.compile(r"\b(?:on|at|in|from)\s+P(\d{1,4})\b"),
    re.compile(r"第\s*(\d{1,4})\s*页"),
)
# Words that frame a name ("in the document titled …", "… paper") and go with it when it is cut out.
_FRAME_BEFORE = re.compile(
    r"(?:\bas\s+(?:described|discussed|mentioned|presented|explained|stated|shown|given|defined|reported|"
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
# The same in Chinese: "在《…》里", "根据…文档中的", "…这篇论文的".
_FRAME_BEFORE_ZH = re.compile(
    r"(?:在|从|根据|按照|关于|对于)?\s*(?:这篇|该)?(?:文档|论文|文章|文件|报告)?\s*[《「“\"]*\s*$"
)
_FRAME_AFTER_ZH = re.compile(
    r"^\s*[》」”\"]*\s*(?:这篇|该)?(?:文档|论文|文章|文件|报告)?(?:里面|里|中|内|之中)?(?:的)?"
)


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


def find_scope(question: str, catalog: Sequence[CatalogEntry]) -> Optional[Scope]:
    """The document(s) the question names, or None. Only names that single out documents count."""
    if not question.strip() or not catalog:
        return None
    text = unicodedata.normalize("NFKC", question)
    for finder, reason in ((_by_file_name, "file name"), (_by_arxiv_id, "arXiv id"), (by_title, "title")):
        found = finder(text, catalog)
        if found:
            entries, spans = found
            if reason != "title":  # the title beside an id or file name goes too ("Strong Consistency … 1301.0676v5")
                spans = spans + title_spans(text, entries)
            rest, pages = _rest_of_question(text, spans)
            if not pages and _about_the_whole(rest):  # "Summarise 1308.3383v2": its title and abstract answer
                rest = _titles(entries)
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


def _titles(entries: Sequence[CatalogEntry]) -> str:
    """What a question about documents as a whole searches for: their titles."""
    return " ".join(dict.fromkeys(title for e in entries for title in e.titles))


def _about_the_whole(rest: str) -> bool:
    """Whether what is left of a question, its document's name cut, asks about nothing in particular."""
    words = [w.casefold() for w in WORD.findall(_ABOUT_THE_WHOLE_ZH.sub(" ", rest))]
    # one Chinese character is a word of its own (光, 热): what is left of the generic words is asked
    return not any((is_content(w) or HAN_CHAR.search(w)) and w not in _ABOUT_THE_WHOLE for w in words)


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
        stem = file_stem(entry.file)
        if len(stem) < 4 or stem not in lowered:  # "a.pdf" would be found in every other question;
            continue  # the substring test first: a regex per document and question took 1.9 s at 1,500 documents
        # Chinese runs on without spaces: a Chinese name is found inside the words around it ("物理公式示例文档中的…")
        bounded = re.escape(stem) if HAN_CHAR.search(stem) else rf"(?<!\w){re.escape(stem)}(?!\w)"
        for match in re.finditer(bounded, lowered):
            start, end = match.span()
            # a file called after one plain word ("report.pdf") is named only as a file or in quotes
            plain_word = stem.isascii() and stem.isalpha()
            if plain_word and not (looks_like_a_name(text[start:end]) or is_framed(text, start, end)):
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
    for pattern in (ARXIV_ID, OLD_ARXIV_ID):
        for match in pattern.finditer(text):
            named = [e for e in catalog if match.group(1) in e.arxiv_ids]
            entries += [e for e in named if e not in entries]
            if named:
                spans.append(match.span())
    return (entries, spans) if entries else None


def _rest_of_question(text: str, spans: Sequence[tuple[int, int]]) -> tuple[str, list[int]]:
    """The question without the named document(s) and the words that framed them, and the pages it names."""
    pages = page_hints(text)
    for start, end in reversed(_merged(spans)):
        before = _FRAME_BEFORE_ZH.sub("", _FRAME_BEFORE.sub("", text[:start]))
        after = _FRAME_AFTER_ZH.sub("", _FRAME_AFTER.sub("", text[end:]))
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
    given = {m.group(1) for m in ARXIV_ID.finditer(file)}
    scoped = {m.group(1) for name in scope.files for m in ARXIV_ID.finditer(name)}
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
    elif scope is None and entries and _about_the_whole(question):  # "Summarise" with a paper picked
        scope = Scope([e.doc_id for e in entries], [e.file for e in entries], _titles(entries), [], "chosen")
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
