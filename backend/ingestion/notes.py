"""What the user reads about one document's ingest: why nothing was stored, and what a stored one lacks."""

from __future__ import annotations

import time
from typing import Optional

from backend.documents.limits import PDFIUM_STRING_LIMIT
from backend.ingestion.uploads import UploadItem
from backend.types import DocumentInfo


def no_text_reason(name: str, unreadable_pages: list[int], empty_ocr_pages: list[int]) -> str:
    if unreadable_pages:
        return f"{name}: no text found (pdfium cannot load pages {page_list(unreadable_pages)}: a damaged page tree)"
    if empty_ocr_pages:
        return f"{name}: no text found (OCR found nothing on pages {page_list(empty_ocr_pages)})"
    return f"{name}: no text found in the document"


def stored_notes(
    item: UploadItem,
    replaced: Optional[DocumentInfo],
    empty_ocr_pages: list[int],
    unreadable_pages: list[int],
    cut_pages: list[int],
) -> Optional[str]:
    """What the user must know about a stored document: what it replaced, and pages not (fully) read."""
    notes = [item.kept_apart] if item.kept_apart else []
    if replaced is not None:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(replaced.created_at))
        notes.append(f"replaced {replaced.file} (a different file: {replaced.pages} pages, indexed {when})")
    if empty_ocr_pages:
        notes.append(f"OCR found no text on page(s) {page_list(empty_ocr_pages)}")
    if unreadable_pages:
        notes.append(
            f"page(s) {page_list(unreadable_pages)} could not be read (pdfium cannot load them: a damaged page tree)"
        )
    if cut_pages:
        notes.append(
            f"page(s) {page_list(cut_pages)}: a text string over {PDFIUM_STRING_LIMIT:,} characters "
            f"was cut by pdfium, the rest of it is missing"
        )
    if not notes:
        return None
    skipped = empty_ocr_pages or unreadable_pages
    return f"{item.name}: " + "; ".join(notes) + ("; the other pages are indexed" if skipped else "")


def page_list(pages: list[int]) -> str:
    return ", ".join(str(p) for p in pages[:20]) + (" …" if len(pages) > 20 else "")
