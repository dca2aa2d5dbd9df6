"""Knowledge-base display names and their Milvus collection names (``kb_`` + UTF-8 hex)."""

from __future__ import annotations

import re
import unicodedata
from typing import Optional

from backend.errors import KnowledgeBaseError

COLLECTION_PREFIX = "kb_"
MAX_NAME_CHARS = 42  # 42 four-byte characters -> 3 + 42*4*2 = 339 > 255, so the byte check below matters too
MAX_COLLECTION_CHARS = 255  # Milvus server limit on collection names
_HEX_BODY = re.compile(r"^(?:[0-9a-f]{2})+$")


def normalize_name(name: str) -> str:
    """Trim surrounding white space; the rest of the name is kept exactly."""
    return (name or "").strip()


def validate_name(name: str) -> str:
    """Return the trimmed name or raise KnowledgeBaseError saying why it cannot be used."""
    clean = normalize_name(name)
    if not clean:
        raise KnowledgeBaseError("knowledge base name is empty")
    if len(clean) > MAX_NAME_CHARS:
        raise KnowledgeBaseError(
            f"knowledge base name '{clean[:20]}…' is {len(clean)} characters; at most {MAX_NAME_CHARS} are allowed")
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Cs") and ch not in "\u200d" for ch in clean):
        raise KnowledgeBaseError(f"knowledge base name {clean!r} contains control characters")
    if len(collection_name_unchecked(clean)) > MAX_COLLECTION_CHARS:
        raise KnowledgeBaseError(
            f"knowledge base name '{clean}' is too long in bytes for a collection name; use fewer characters")
    return clean


def collection_name_unchecked(name: str) -> str:
    return COLLECTION_PREFIX + name.encode("utf-8").hex()


def collection_name(name: str) -> str:
    """Display name -> collection name, after validation (``物理论文`` -> ``kb_e789a9...``)."""
    return collection_name_unchecked(validate_name(name))


def display_name(collection: str) -> Optional[str]:
    """Collection name -> display name, or None when the collection is not one of ours."""
    if not collection.startswith(COLLECTION_PREFIX):
        return None
    body = collection[len(COLLECTION_PREFIX):]
    if not _HEX_BODY.match(body):
        return None
    try:
        name = bytes.fromhex(body).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None
    return name if name == normalize_name(name) and name else None
