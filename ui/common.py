"""Helpers every tab shares: bilingual labels, readable errors, and the knowledge-base choice lists."""

from __future__ import annotations

import logging
from typing import Any, Optional

import gradio as gr

from backend.errors import DocLensError
from backend.service import DocLens

log = logging.getLogger("doclens.ui")

ALL_DOCUMENTS = "all documents · 全部文档"
_language = "en"


def set_language(language: str) -> None:
    """Which half of a bilingual label comes first (settings.ui.language); set once when the app is built."""
    global _language
    _language = "zh" if language == "zh" else "en"


def bi(en: str, zh: str) -> str:
    """A bilingual label: both languages, the configured one first."""
    return f"{zh} · {en}" if _language == "zh" else f"{en} · {zh}"


def error_text(exc: BaseException, action: str) -> str:
    """One readable line for the user; unexpected errors are logged with their traceback."""
    if isinstance(exc, DocLensError):
        return str(exc)
    log.exception("unexpected error while trying to %s", action)
    return f"could not {action}: unexpected {exc.__class__.__name__} (details are in the server log)"


def warning_md(message: str) -> str:
    return f"⚠️ {message}"


def kb_names(service: DocLens) -> list[str]:
    try:
        return [kb.name for kb in service.list_kbs()]
    except Exception as exc:  # the page must still load when the store is unhappy
        error_text(exc, "list knowledge bases")
        return []


def pick(current: Optional[str], choices: list[str]) -> Optional[str]:
    """Keep the current choice when it still exists, else the first one."""
    if current in choices:
        return current
    return choices[0] if choices else None


def kb_dropdown(service: DocLens, current: Optional[str]) -> Any:
    choices = kb_names(service)
    return gr.update(choices=choices, value=pick(current, choices))


def document_files(service: DocLens, kb: Optional[str]) -> list[str]:
    if not kb:
        return []
    try:
        return [doc.file for doc in service.documents(kb)]
    except Exception as exc:
        error_text(exc, "list documents")
        return []


def doc_filter_dropdown(service: DocLens, kb: Optional[str], current: Optional[str]) -> Any:
    choices = [ALL_DOCUMENTS, *document_files(service, kb)]
    return gr.update(choices=choices, value=current if current in choices else ALL_DOCUMENTS)


def selected_file(doc_filter: Optional[str]) -> Optional[str]:
    """The doc-filter value as a file name, or None for all documents."""
    return None if not doc_filter or doc_filter == ALL_DOCUMENTS else doc_filter
