"""Milvus filter expressions, built with escaping: user text never reaches a filter as raw syntax."""

from __future__ import annotations

from typing import Iterable, Optional

from backend.store.base import SearchFilter


def quote(value: str) -> str:
    """A Milvus expression string literal: user text never reaches a filter unescaped."""
    escaped = (
        value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    )
    return f'"{escaped}"'


def in_list(field: str, values: Iterable[str], negate: bool = False) -> str:
    op = "not in" if negate else "in"
    return f"{field} {op} [{', '.join(quote(v) for v in values)}]"


def filter_expression(where: Optional[SearchFilter]) -> str:
    if where is None:
        return ""
    parts = []
    if where.include_doc_ids is not None:
        parts.append(in_list("doc_id", where.include_doc_ids))
    if where.exclude_doc_ids:
        parts.append(in_list("doc_id", where.exclude_doc_ids, negate=True))
    return " and ".join(parts)
