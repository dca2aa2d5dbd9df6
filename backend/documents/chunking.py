"""Sliding-window chunking of a document's pages at paragraph and sentence boundaries.

Pages are cut into units that are never split: sentences, ``$$…$$`` blocks and Markdown tables (or
groups of table rows under a repeated header when a table is bigger than a chunk). Units are packed
into chunks of at most ``size`` characters; neighbouring chunks share up to ``overlap`` characters of
sentences. A chunk does not run over a page break unless a paragraph continues on the next page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from backend.documents.equations import is_equation_text
from backend.stage_times import stage
from backend.text import CJK_CHAR, join_words
from backend.types import Chunk, Figure, PageText

_MATH_BLOCK = re.compile(r"\$\$.+?\$\$", re.DOTALL)
_SENTENCE_END = re.compile(r"[。！？；]+[”’」』）)]*\s*|[.!?]+[\"'”’)\]]*\s+")
_SOFT_BREAK = re.compile(r"[\s，,、；;：:]")
_TABLE_RULE = re.compile(r"\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?")
_REFERENCES_HEADING = re.compile(
    r"^(?:(?:\d+|[IVX]+|[A-Z])\.?\s*)?(?:references|bibliography|literature cited|works cited|参考文献|參考文獻)"
    r"(?:\s*[:：])?(?=\s*$|\s+\[1\]|\s+1\.\s)",
    re.IGNORECASE,
)
_AFTER_REFERENCES = re.compile(
    r"^(?:(?:[A-Z]|\d+)\.?\s+)?(?:appendix|appendices|supplementary|附录|附錄)\b", re.IGNORECASE
)
_ENTRY = re.compile(r"^\s*(?:\[\d{1,3}\]|\d{1,3}\.\s+\S)")
_YEAR = re.compile(r"\b(?:19|20)\d\d[a-z]?\b")
_TERMINAL = re.compile(r"[。！？.!?:：;；\"”’」』)）|$]\s*$")
# a footnote, read after its page's text ("3https://…", "∗Currently at…", "1The method…"): the next page's
# first sentence continues the page's body, not it
_FOOTNOTE = re.compile(r"^(?:\d{1,2}|[∗*†‡§¶])(?:https?://|[A-Z“\"(])")


@dataclass
class _Unit:
    text: str
    page: int
    kind: str  # sentence | math | table
    new_paragraph: bool  # starts a paragraph (joined with a blank line), else continues the previous unit
    carried: bool = False  # repeated from the previous chunk as overlap
    references: bool = False  # part of the bibliography


@stage("chunking")
def chunk_pages(pages: Sequence[PageText], size: int, overlap: int) -> list[Chunk]:
    """Chunks of at most ``size`` characters (a single oversized table row or formula may exceed it)."""
    if size <= 0:
        raise ValueError("chunk size must be positive")
    overlap = max(0, min(overlap, size // 2))
    units = [u for page in pages for u in _page_units(page, size)]
    mark_references(units)
    return _Packer(size, overlap).pack(units)


@stage("chunking")
def with_figure_chunks(chunks: list[Chunk], figures: Sequence[Figure]) -> list[Chunk]:
    """The chunks, then one chunk per figure that holds words taken out of the body (a plot drawn with
    words): its caption and words are searchable once, not as a hundred chunks of noise."""
    texts = [f for f in figures if f.text.strip()]
    return chunks + [
        Chunk(f"{f.caption}\n{f.text}".strip(), f.page, f.page, len(chunks) + i, kind="figure")
        for i, f in enumerate(texts)
    ]


# ------------------------------------------------------------------------------------------- units


def _page_units(page: PageText, size: int) -> list[_Unit]:
    units: list[_Unit] = []
    for block in _blocks(page.text):
        if block.startswith("$$") or is_equation_text(block):  # a display equation: one unit, never split
            units.append(_Unit(block, page.page, "math", True))
        elif _is_table(block):
            units += [_Unit(t, page.page, "table", True) for t in _split_table(block, size)]
        else:
            pieces = [p for s in _sentences(block) for p in _hard_split(s, size)]
            units += [_Unit(p, page.page, "sentence", i == 0) for i, p in enumerate(pieces)]
    return units


def _blocks(text: str) -> Iterable[str]:
    """Paragraphs (split at blank lines), with every $$…$$ block kept whole as its own block."""
    position = 0
    for match in _MATH_BLOCK.finditer(text):
        yield from _paragraphs(text[position : match.start()])
        yield match.group(0).strip()
        position = match.end()
    yield from _paragraphs(text[position:])


def _paragraphs(text: str) -> Iterable[str]:
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        yield from _separate_tables(paragraph)


def _separate_tables(paragraph: str) -> Iterable[str]:
    """A table written right under a text line (no blank line) is still its own block."""
    lines = paragraph.split("\n")
    current: list[str] = []
    in_table = False
    for line in lines:
        row = line.strip().startswith("|")
        if current and row != in_table:
            yield "\n".join(current).strip()
            current = []
        current.append(line)
        in_table = row
    if current:
        yield "\n".join(current).strip()


def _is_table(block: str) -> bool:
    return all(line.strip().startswith("|") for line in block.split("\n"))


def _split_table(table: str, size: int) -> list[str]:
    """The whole table if it fits, else groups of rows each under the repeated header."""
    if len(table) <= size:
        return [table]
    lines = table.split("\n")
    has_header = len(lines) > 1 and _TABLE_RULE.fullmatch(lines[1].strip()) is not None
    header = lines[:2] if has_header else []
    rows = lines[2:] if has_header else lines
    groups: list[list[str]] = []
    for row in rows:
        if groups and len("\n".join(header + groups[-1] + [row])) <= size:
            groups[-1].append(row)
        else:
            groups.append([row])
    return ["\n".join(header + g) for g in groups]


def _sentences(paragraph: str) -> list[str]:
    """Sentences with their trailing whitespace, so that concatenating them gives the paragraph back."""
    pieces, start = [], 0
    for match in _SENTENCE_END.finditer(paragraph):
        pieces.append(paragraph[start : match.end()])
        start = match.end()
    if start < len(paragraph):
        pieces.append(paragraph[start:])
    return [p for p in pieces if p.strip()]


def _hard_split(sentence: str, size: int) -> list[str]:
    """A sentence longer than a chunk is cut at the last space or comma before the limit."""
    pieces = []
    while len(sentence) > size:
        cut = max((m.end() for m in _SOFT_BREAK.finditer(sentence, 0, size)), default=0)
        cut = cut if cut > size // 2 else size
        pieces.append(sentence[:cut])
        sentence = sentence[cut:]
    if sentence:
        pieces.append(sentence)
    return pieces


# -------------------------------------------------------------------------------------- bibliography


def mark_references(units: Sequence[_Unit]) -> None:
    """Units of the bibliography: from a "References" / "参考文献" heading to the end (or an appendix), or,
    without a heading, a run of at least three numbered entries with years that ends the document."""
    heading = next(
        (
            i
            for i in range(len(units) - 1, -1, -1)
            if units[i].new_paragraph and _REFERENCES_HEADING.match(units[i].text.strip())
        ),
        None,
    )
    start = heading if heading is not None else _trailing_entries(units)
    if start is None:
        return
    for unit in units[start:]:
        if unit.new_paragraph and _AFTER_REFERENCES.match(unit.text.strip()):
            break
        unit.references = True


def _trailing_entries(units: Sequence[_Unit]) -> int | None:
    starts = [i for i, u in enumerate(units) if u.new_paragraph]
    first = None
    for i in reversed(starts):
        paragraph = "".join(u.text for u in units[i : _next_start(starts, i, len(units))])
        if not (_ENTRY.match(paragraph) and _YEAR.search(paragraph)):
            break
        first = i
    entries = sum(1 for i in starts if first is not None and i >= first)
    return first if entries >= 3 else None


def _next_start(starts: Sequence[int], i: int, end: int) -> int:
    later = [s for s in starts if s > i]
    return later[0] if later else end


# ------------------------------------------------------------------------------------------ packing


class _Packer:
    def __init__(self, size: int, overlap: int) -> None:
        self.size = size
        self.overlap = overlap
        self.min_chunk = max(20, size // 4)  # smaller remnants are merged into a neighbour
        self.chunks: list[tuple[list[_Unit], str]] = []

    def pack(self, units: Sequence[_Unit]) -> list[Chunk]:
        current: list[_Unit] = []
        for unit in units:
            if current and unit.references != current[-1].references:
                self._emit(current)  # the bibliography never shares a chunk with the body
                current = []
            if current and unit.page != current[-1].page:
                if _continues(current[-1], unit) and not _ends_in_footnote(current):
                    unit = _Unit(unit.text, unit.page, unit.kind, False, references=unit.references)
                elif len(_join(current)) >= self.min_chunk or self._fits_previous(current):
                    self._emit(current)
                    current = []
            if current and len(_join(current + [unit])) > self.size:
                carried = self._overlap_units(current, unit)
                self._emit(current)
                current = carried
            current.append(unit)
        if current:
            self._emit(current, last=True)
        return [
            Chunk(text=text, page=units_[0].page, page_end=units_[-1].page, chunk_index=i, kind=_kind(units_))
            for i, (units_, text) in enumerate(self.chunks)
        ]

    def _fits_previous(self, units: list[_Unit], any_page: bool = False) -> bool:
        if not self.chunks:
            return False
        previous_units, _ = self.chunks[-1]
        if previous_units[-1].references != units[0].references:
            return False
        return (any_page or previous_units[-1].page == units[0].page) and len(
            _join(previous_units + units)
        ) <= self.size + self.min_chunk

    def _emit(self, units: list[_Unit], last: bool = False) -> None:
        """Store a chunk; a tiny one goes onto the previous chunk (of the same page, unless it is the
        document's last bit) when there is room."""
        text = _join(units)
        if not text.strip():
            return
        if len(text) < self.min_chunk and self._fits_previous(units, any_page=last):
            previous_units, _ = self.chunks.pop()
            merged = previous_units + [u for u in units if not u.carried]
            self.chunks.append((merged, _join(merged)))
            return
        self.chunks.append((list(units), text))

    def _overlap_units(self, current: list[_Unit], following: _Unit) -> list[_Unit]:
        """Trailing sentences of the chunk (at most ``overlap`` characters) that start the next one."""
        if not self.overlap or current[-1].page != following.page and not _continues(current[-1], following):
            return []
        carried: list[_Unit] = []
        for unit in reversed(current[1:]):
            if unit.kind != "sentence" or len(_join([unit] + carried)) > self.overlap:
                break
            carried.insert(
                0, _Unit(unit.text, unit.page, unit.kind, unit.new_paragraph, carried=True, references=unit.references)
            )
        if not carried and current[-1].kind == "sentence":
            tail = _tail(current[-1].text, self.overlap)
            if tail:
                carried = [
                    _Unit(tail, current[-1].page, "sentence", False, carried=True, references=current[-1].references)
                ]
        if carried and len(_join(carried + [following])) > self.size:
            return []
        return carried


def _kind(units: Sequence[_Unit]) -> str:
    """references, equation (mostly display equations), else text."""
    if units[0].references:
        return "references"
    math = sum(len(u.text) for u in units if u.kind == "math")
    return "equation" if math >= 0.5 * sum(len(u.text) for u in units) else "text"


def _tail(text: str, limit: int) -> str:
    """The last ``limit`` characters of a sentence, starting at a word boundary in Latin text."""
    tail = text.rstrip()[-limit:]
    if len(tail) == len(text.rstrip()) or CJK_CHAR.search(tail[:1] or "x"):
        return tail if len(tail) < len(text.rstrip()) else ""
    space = tail.find(" ")
    return tail[space + 1 :] if 0 <= space < len(tail) - 1 else ""


def _ends_in_footnote(units: Sequence[_Unit]) -> bool:
    start = next((unit for unit in reversed(units) if unit.new_paragraph), units[0])
    return bool(_FOOTNOTE.match(start.text.lstrip()))


def _continues(last: _Unit, following: _Unit) -> bool:
    """A paragraph runs over the page break: it did not end with a full stop and text follows."""
    return last.kind == "sentence" and following.kind == "sentence" and not _TERMINAL.search(last.text)


def _join(units: Sequence[_Unit]) -> str:
    text = ""
    for unit in units:
        if not text:
            text = unit.text.strip() if unit.new_paragraph else unit.text.lstrip()
        elif unit.new_paragraph:
            text = text.rstrip() + "\n\n" + unit.text.strip()
        else:
            text = _glue(text, unit.text)
    return text.strip()


def _glue(left: str, right: str) -> str:
    """Sentences of one paragraph: as they were, or joined across a page break like wrapped lines."""
    if left[-1:].isspace() or not right.strip():
        return left + right
    return join_words(left, right.lstrip())
