"""What the page says about a figure, kept with it at ingest: its caption or the nearest caption-like line,
and the sentences next to it that refer to it ("从下图中可以看出…", "as the figure below shows").

A figure at the top of a page is introduced at the end of the previous page: then the previous page's last
lines stand for the text above it.
"""

from __future__ import annotations

import re
from typing import Sequence

from backend.documents.layout import BBox, TextLine
from backend.documents.paragraphs import join_paragraph_lines

TAIL_LINES = 6  # lines of text next to a figure searched for sentences about it
MENTION_CHARS = 600  # of those sentences kept with the figure
TITLE_CHARS = 30  # a caption-like line is short and is no sentence
_SENTENCE_END = re.compile(r"[。！？；：:;,，、.!?]\s*$")
_SENTENCE_BREAK = re.compile(r"(?<=[。！？；!?;])\s*|(?<=\.)\s+")  # not inside 23.3 %
# the figure below / after it ("下图", "如下图", "the following figure", "shown below")
_FORWARD = re.compile(
    r"下图|下面的图|如下图|下方的?图|\b(?:the )?(?:figure|chart|plot|graph|diagram) below\b|"
    r"\bthe following (?:figure|chart|plot|graph|diagram)\b|\bshown below\b|\bas follows\b",
    re.IGNORECASE,
)
# the figure above / before it
_BACKWARD = re.compile(
    r"上图|上面的图|如上图|上方的?图|\b(?:the )?(?:figure|chart|plot|graph|diagram) above\b|"
    r"\bthe (?:preceding|previous) (?:figure|chart|plot|graph|diagram)\b|\bshown above\b",
    re.IGNORECASE,
)
_EITHER = re.compile(r"如图所示|图中|该图|此图|\bthis (?:figure|chart|plot|graph|diagram)\b", re.IGNORECASE)
_PAGE_NUMBER = re.compile(r"^[\d\s/–—-]+$|^第\s*\d+\s*页")


def is_caption_like(text: str) -> bool:
    """A short line that is no sentence: a title or a heading right next to a figure ("市场份额趋势")."""
    flat = text.strip()
    return 1 < len(flat) <= TITLE_CHARS and not _SENTENCE_END.search(flat) and not _PAGE_NUMBER.match(flat)


def lines_above(box: BBox, lines: Sequence[TextLine]) -> list[TextLine]:
    """The text lines above the figure that share its columns, nearest last."""
    above = [ln for ln in lines if not ln.block and ln.y0 >= box[3] - 2.0 and ln.x1 > box[0] and ln.x0 < box[2]]
    return sorted(above, key=lambda ln: -ln.y0)[-TAIL_LINES:]


def lines_below(box: BBox, lines: Sequence[TextLine]) -> list[TextLine]:
    """The text lines below the figure that share its columns, nearest first."""
    below = [ln for ln in lines if not ln.block and ln.y1 <= box[1] + 2.0 and ln.x1 > box[0] and ln.x0 < box[2]]
    return sorted(below, key=lambda ln: -ln.y1)[:TAIL_LINES]


def nearest_title(above: Sequence[str], below: Sequence[str]) -> str:
    """The caption-like line right below the figure, else one of the two right above it."""
    if below and is_caption_like(below[0]):
        return below[0].strip()
    return next((text.strip() for text in reversed(above[-2:]) if is_caption_like(text)), "")


def figure_mentions(above: Sequence[str], below: Sequence[str], caption: str = "") -> str:
    """Sentences right before the figure that point ahead to it, and right after it that point back,
    each once, at most MENTION_CHARS."""
    found: list[str] = []
    for lines, pointing in ((above, _FORWARD), (below, _BACKWARD)):
        for sentence in _sentences(lines):
            if (pointing.search(sentence) or _EITHER.search(sentence)) and sentence not in found:
                found.append(sentence)
    kept: list[str] = []
    for sentence in found:
        if sentence == caption.strip() or sum(len(s) + 1 for s in kept) + len(sentence) > MENTION_CHARS:
            continue
        kept.append(sentence)
    return " ".join(kept)


def _sentences(lines: Sequence[str]) -> list[str]:
    """Wrapped lines joined, headings apart, cut into sentences."""
    paragraphs: list[str] = []
    for line in (ln.strip() for ln in lines):
        if paragraphs and not is_caption_like(line) and not is_caption_like(paragraphs[-1]):
            paragraphs[-1] = join_paragraph_lines(paragraphs[-1], line)
        elif line:
            paragraphs.append(line)
    return [s.strip() for p in paragraphs for s in _SENTENCE_BREAK.split(p) if s.strip()]
