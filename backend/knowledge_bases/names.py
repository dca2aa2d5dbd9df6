"""Knowledge-base display names and their Milvus collection names (``kb_`` + UTF-8 hex), and the names
of documents as stored (the user's file names, cleaned)."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import Optional, Sequence

from backend.errors import KnowledgeBaseError

COLLECTION_PREFIX = "kb_"
MAX_NAME_CHARS = 42  # 42 four-byte characters -> 3 + 42*4*2 = 339 > 255, so the byte check below matters too
MAX_COLLECTION_CHARS = 255  # Milvus server limit on collection names
_HEX_BODY = re.compile(r"^(?:[0-9a-f]{2})+$")
MAX_NAME_BYTES = 240  # file names are shown and stored, never used as paths


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
            f"knowledge base name '{clean[:20]}…' is {len(clean)} characters; at most {MAX_NAME_CHARS} are allowed"
        )
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Cs") and ch not in "\u200d" for ch in clean):
        raise KnowledgeBaseError(f"knowledge base name {clean!r} contains control characters")
    if len(collection_name_unchecked(clean)) > MAX_COLLECTION_CHARS:
        raise KnowledgeBaseError(
            f"knowledge base name '{clean}' is too long in bytes for a collection name; use fewer characters"
        )
    return clean


def name_key(name: str) -> str:
    """What two names that look the same in a list share: "Papers", "papers" and "Ｐａｐｅｒｓ" (full width) have
    one key. Knowledge bases are kept under distinct keys; the collection name keeps the exact name."""
    return unicodedata.normalize("NFKC", normalize_name(name)).casefold()


def collection_name_unchecked(name: str) -> str:
    return COLLECTION_PREFIX + name.encode("utf-8").hex()


def collection_name(name: str) -> str:
    """Display name -> collection name, after validation (``物理论文`` -> ``kb_e789a9...``)."""
    return collection_name_unchecked(validate_name(name))


def display_name(collection: str) -> Optional[str]:
    """Collection name -> display name, or None when the collection is not one of ours."""
    if not collection.startswith(COLLECTION_PREFIX):
        return None
    body = collection[len(COLLECTION_PREFIX) :]
    if not _HEX_BODY.match(body):
        return None
    try:
        name = bytes.fromhex(body).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None
    return name if name == normalize_name(name) and name else None


def clean_file_name(name: str) -> str:
    """The user's name of a file, kept whole: only what follows the last ``/`` (a folder upload or a
    browser may send a relative path), without control characters. A backslash is an ordinary character
    on every OS (``old\\report.pdf`` is not ``report.pdf``). A name over MAX_NAME_BYTES is cut and ends
    in a digest of the whole name, so two long names sharing their first bytes never replace each other."""
    base = name.split("/")[-1].strip()
    base = "".join(ch for ch in base if unicodedata.category(ch) != "Cc")
    if base in ("", ".", ".."):
        base = "document.pdf"
    if len(base.encode("utf-8")) > MAX_NAME_BYTES:
        base = _shortened_name(base)
    return base


def _shortened_name(name: str) -> str:
    """``<start of the name>…~<12 hex of its SHA-256>.<ext>``, at most MAX_NAME_BYTES bytes."""
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem or len(ext) > 8:
        stem, ext = name, ""
    suffix = f"…~{hashlib.sha256(name.encode('utf-8')).hexdigest()[:12]}" + (f".{ext}" if ext else "")
    room = MAX_NAME_BYTES - len(suffix.encode("utf-8"))
    return stem.encode("utf-8")[:room].decode("utf-8", "ignore").rstrip() + suffix


def name_list(given: str | Sequence[str] | None) -> list[str]:
    """One name, several, or none (None or ""), as a list: a question may be asked of several knowledge
    bases and documents."""
    if isinstance(given, str):
        return [given] if given else []
    return list(given or [])
