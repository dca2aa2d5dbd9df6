"""A question over several knowledge bases: each one's candidates, made one set of candidates.

The stages after this one (fusion, rerank, confidence) then see one list, as for one knowledge base:
one ranking over the union, not a block per knowledge base.

- Dense hits are merged by cosine: every knowledge base of a question embeds with the same model (one
  that does not is refused when it is opened), so the scores are on one scale, and the union's top ``dense_top_n`` is what
  one collection of the same chunks would return.
- Keyword hits are not: BM25's IDF and length norms are each collection's own, so raw scores of two
  collections do not compare. Each knowledge base's keyword list is kept in its own order and the lists
  are interleaved by rank (what RRF over the per-KB lists gives), cut to ``keyword_top_n``. A hit's
  ``bm25_lead`` is its share of the best hit of them all, as in one collection: the share of its own
  collection's best gave every knowledge base's best a lead of 1, and a question whose answer is in none
  of them a confidence as if each had it (left-out questions: 39 % shown against 36 % in one collection).

Each knowledge base is first asked for its share of each list (``share``): the rows a search returns cost
more to decode than to find, and ten knowledge bases would otherwise read ten lists' worth. The ones whose
share may hide more of the merged lists' best are asked again for everything (``short_of_dense``,
``short_of_keywords``), so the cut lists are the ones full lists would give.

Chunk ids are unique within a collection only (the same PDF in two knowledge bases has the same ids),
so across knowledge bases each id is prefixed with its collection.
"""

from __future__ import annotations

import copy
import math
from dataclasses import replace
from typing import TYPE_CHECKING, Sequence

from backend.errors import KnowledgeBaseError
from backend.knowledge_bases import names
from backend.retrieval.candidates import Candidates, collect_sources
from backend.retrieval.query_plan import KeywordRun
from backend.settings import RetrievalSettings
from backend.store.base import ChunkRow, Hit
from backend.types import Figure, Source

if TYPE_CHECKING:
    from backend.knowledge_bases.open_kb import OpenKB


def share(top: int, kbs: int, spread: int = 1) -> int:
    """Hits to ask of each of ``kbs`` knowledge bases first, of a list cut to ``top`` after the merge (each
    hit read costs: ten knowledge bases reading 30 dense and 30 keyword hits each spent 50 ms of a question
    decoding rows). Keyword hits are interleaved by rank, so this many from each is all the cut keeps;
    dense hits are merged by score, so they get ``spread`` times their share (the best passages of a
    question are seldom in one knowledge base), and one whose share all scores high is asked again."""
    return min(top, max(1, math.ceil(spread * top / kbs)))


def short_of_keywords(found: Sequence[Candidates], asked: int, top: int) -> list[int]:
    """The knowledge bases (indexes into ``found``) to ask again with the full ``top``: when some gave fewer
    than ``asked`` (all they have), the interleave has room for deeper hits of those that gave ``asked``."""
    runs = max((len(c.keyword_runs) for c in found), default=0)
    short = [i for i in range(runs) if sum(len(c.keyword_runs[i].hits) for c in found if i < len(c.keyword_runs)) < top]
    return [
        k
        for k, c in enumerate(found)
        if any(i < len(c.keyword_runs) and len(c.keyword_runs[i].hits) >= asked for i in short)
    ]


def short_of_dense(found: Sequence[Candidates], asked: int, top: int) -> list[int]:
    """The knowledge bases to ask again with the full ``top`` dense hits: those that gave ``asked`` hits
    whose last still scores among the union's ``top`` best (a deeper hit of theirs might too)."""
    lists = max((len(c.dense_lists) for c in found), default=0)
    again = set()
    for i in range(lists):
        scores = sorted((hit.score for c in found if i < len(c.dense_lists) for hit in c.dense_lists[i]), reverse=True)
        bar = scores[top - 1] if len(scores) >= top else float("-inf")
        for k, c in enumerate(found):
            hits = c.dense_lists[i] if i < len(c.dense_lists) else []
            if len(hits) >= asked and min(hit.score for hit in hits) >= bar:
                again.add(k)
    return sorted(again)


def merged(parts: Sequence[Candidates], settings: RetrievalSettings) -> Candidates:
    """One set of candidates from each knowledge base's (``parts``, in the order asked)."""
    parts = [_prefixed(part) for part in parts]
    query = parts[0].query
    dense_lists = [
        _by_score([part.dense_lists[i] for part in parts if i < len(part.dense_lists)], settings.dense_top_n)
        for i in range(max(len(part.dense_lists) for part in parts))
    ]
    keyword_runs = [
        _interleaved([part.keyword_runs[i] for part in parts if i < len(part.keyword_runs)], settings.keyword_top_n)
        for i in range(max(len(part.keyword_runs) for part in parts))
    ]
    sources = collect_sources(dense_lists, keyword_runs)
    for part in parts:  # its knowledge base, and the cosines of keyword-only hits (from its stored vectors)
        for chunk_id, source in sources.items():
            known = part.sources.get(chunk_id)
            if known is not None:
                source.kb = known.kb
                source.similarity = known.similarity if source.similarity is None else source.similarity
    named_pages = [sources.setdefault(s.chunk_id, s) for part in parts for s in part.named_pages]
    return Candidates(query, dense_lists, keyword_runs, sources, named_pages)


def _prefixed(part: Candidates) -> Candidates:
    collection = part.query.collection
    rows: dict[int, ChunkRow] = {}  # one copy per row: a row is in several lists

    def hit(h: Hit) -> Hit:
        row = rows.get(id(h.row))
        if row is None:
            row = rows[id(h.row)] = copy.copy(h.row)  # dataclasses.replace costs 20 ms a question at 10 KBs
            row.id = f"{collection}/{h.row.id}"
        return Hit(row, h.score)

    sources = {f"{collection}/{cid}": _renamed(s, f"{collection}/{cid}") for cid, s in part.sources.items()}
    return Candidates(
        part.query,
        [[hit(h) for h in hits] for hits in part.dense_lists],
        [replace(run, hits=[hit(h) for h in run.hits]) for run in part.keyword_runs],
        sources,
        [sources[f"{collection}/{s.chunk_id}"] for s in part.named_pages],
    )


def _renamed(source: Source, chunk_id: str) -> Source:
    renamed = copy.copy(source)
    renamed.chunk_id = chunk_id
    renamed.scores = dict(source.scores)
    return renamed


def _by_score(lists: Sequence[list[Hit]], top: int) -> list[Hit]:
    return sorted((hit for hits in lists for hit in hits), key=lambda hit: -hit.score)[:top]


def _interleaved(runs: Sequence[KeywordRun], top: int) -> KeywordRun:
    """One keyword run: the first hit of each knowledge base, then the second of each, ... Scores become
    each hit's share of the best of all the runs (the module's docstring says why)."""
    ranked: list[tuple[int, float, Hit]] = []
    leader = max((hit.score for run in runs for hit in run.hits), default=0.0)
    for run in runs:
        for rank, hit in enumerate(run.hits):
            share = hit.score / leader if leader > 0 else 0.0
            ranked.append((rank, -share, Hit(hit.row, share)))
    ranked.sort(key=lambda item: item[:2])
    return replace(runs[0], hits=[hit for _, _, hit in ranked[:top]])


def picked_documents(library: Sequence[OpenKB], docs: Sequence[str]) -> dict[str, list[str]]:
    """The documents a user picked, by knowledge base (collection -> file names). A pick is a file name
    (in every knowledge base asked that holds it) or ``"KB name/file name"`` (file names hold no ``/``)."""
    picked: dict[str, list[str]] = {}
    for doc in docs:
        holders = _holders(library, doc)
        if not holders:
            if len(library) == 1:
                library[0].find_document(doc)  # raises the one knowledge base's own message
            asked = ", ".join(f"'{kb.name}'" for kb in library)
            raise KnowledgeBaseError(f"document '{doc}' is in none of the knowledge bases {asked}")
        for kb, file in holders:
            picked.setdefault(kb.collection, []).append(file)
    return picked


def _holders(library: Sequence[OpenKB], doc: str) -> list[tuple[OpenKB, str]]:
    kb_name, _, file = doc.rpartition("/")
    if kb_name:
        named = [kb for kb in library if names.name_key(kb.name) == names.name_key(kb_name)]
        if named:
            return [(kb, file) for kb in named if _holds(kb, file)]
    return [(kb, doc) for kb in library if _holds(kb, doc)]


def _holds(kb: OpenKB, file: str) -> bool:
    try:
        kb.find_document(file)
    except KnowledgeBaseError:
        return False
    return True


def held(kb: OpenKB, files: Sequence[str]) -> list[str]:
    """The ones of ``files`` that ``kb`` holds (the evaluation leaves its question's document out)."""
    return [file for file in files if _holds(kb, file)]


def figure_of(library: Sequence[OpenKB], figure_id: str) -> tuple[OpenKB, Figure]:
    """The figure and the first knowledge base asked that holds it (ids are per knowledge base)."""
    for kb in library[:-1]:
        try:
            return kb, kb.figure(figure_id)
        except KnowledgeBaseError:
            continue
    return library[-1], library[-1].figure(figure_id)  # raises the last one's message if none holds it
