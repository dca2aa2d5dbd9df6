"""The pages of a document parsed so far, kept on disk so an interrupted upload resumes where it stopped.

A scanned book of 500 pages is minutes of OCR: if the app is killed (or the machine restarts) at page 400,
uploading the same file again starts at page 401. Each parsed page is appended as one JSON line the
moment it is read; a line cut short by the kill is ignored. The file belongs to a pending document, never
to search: the document stays all or nothing (it becomes visible only when its last chunk is stored).
A cancel or a failure removes the file with the document; only a crash leaves it behind
(``KnowledgeBases.recover`` keeps it, with the figures it names, for a week: ``open_kb.stale_parsed``).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from backend.types import Figure, PageText

log = logging.getLogger(__name__)


@dataclass
class DonePage:
    """One parsed page as the ingestor keeps it: its text, its figures, and what was noted about it."""

    page: PageText
    figures: list[Figure] = field(default_factory=list)
    empty_ocr: bool = False
    unreadable: bool = False
    cut_objects: int = 0
    carry: dict = field(default_factory=dict)  # what the next page reads of this one (documents.pdf)


class PageCheckpoint:
    """The parsed pages of one pending document (``parsed/<doc_id>.jsonl`` in its knowledge base's folder)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> list[DonePage]:
        """The pages kept, from page 1 without a gap, each with its figure files still there; [] if none."""
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError:
            return []
        done: list[DonePage] = []
        for line in lines:
            page = _page_of(line)
            if page is None or page.page.page != len(done) + 1:
                break  # a line the kill cut short, or a gap: resume from there
            if not all(Path(f.path).is_file() for f in page.figures):
                break
            done.append(page)
        return done

    def start(self, kept: list[DonePage]) -> None:
        """Written again with the pages kept: what follows a torn line is appended after good ones."""
        self.path.parent.mkdir(exist_ok=True)
        partial = self.path.with_suffix(".part")
        partial.write_text("".join(_line_of(p) for p in kept), encoding="utf-8")
        partial.replace(self.path)

    def append(self, page: DonePage) -> None:
        with self.path.open("a", encoding="utf-8") as out:
            out.write(_line_of(page))
            out.flush()
            os.fsync(out.fileno())  # a page counted as done is on disk before the next one starts

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
        self.path.with_suffix(".part").unlink(missing_ok=True)


def carried(done: list[DonePage]) -> dict:
    """What the pages after ``done`` read of them (``iter_pages``'s ``carry``)."""
    return done[-1].carry if done else {}


def _line_of(page: DonePage) -> str:
    return json.dumps(asdict(page), ensure_ascii=False) + "\n"


def _page_of(line: str) -> DonePage | None:
    try:
        raw = json.loads(line)
        return DonePage(
            page=PageText(**raw["page"]),
            figures=[Figure(**f) for f in raw.get("figures", [])],
            empty_ocr=bool(raw.get("empty_ocr")),
            unreadable=bool(raw.get("unreadable")),
            cut_objects=int(raw.get("cut_objects", 0)),
            carry=dict(raw.get("carry") or {}),
        )
    except (ValueError, TypeError, KeyError) as exc:
        log.info("a checkpoint line is not whole (%s): resuming before it", exc)
        return None
