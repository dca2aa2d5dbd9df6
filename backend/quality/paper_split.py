"""A deterministic split of a question set by paper: tuning on the questions of some papers and measuring
on the others shows whether a weight learned the papers or the task.

A paper's half follows from a hash of its file name alone, so a paper keeps its half whatever else the
set holds, and every question about one paper lands in the same half.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from pathlib import PurePath
from typing import Iterable, Mapping

TUNE = "tune"
HELD_OUT = "held-out"
HALVES = (TUNE, HELD_OUT)
# Part of the hash: picked once, among a few, for halves of similar question counts on arxiv-dev (82 / 62
# questions, 4 / 3 papers with questions); never changed after tuning started.
SALT = "split-1"


def paper_half(file_name: str, salt: str = SALT) -> str:
    """``tune`` or ``held-out`` for a paper, from its file name (without folders)."""
    digest = hashlib.sha256((salt + PurePath(file_name).name).encode("utf-8")).digest()
    return TUNE if digest[0] % 2 else HELD_OUT


def split_questions(questions: Iterable[Mapping], salt: str = SALT) -> dict[str, list[Mapping]]:
    """The questions of each half (by their ``doc``), in their order."""
    halves: dict[str, list[Mapping]] = defaultdict(list)
    for question in questions:
        halves[paper_half(question["doc"], salt)].append(question)
    return {half: halves.get(half, []) for half in HALVES}
