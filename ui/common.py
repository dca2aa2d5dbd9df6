"""Helpers every tab shares: readable errors, and the knowledge-base and document choice lists."""

from __future__ import annotations

import logging
import re
from typing import Any, Optional

import gradio as gr

from backend.errors import DocLensError
from backend.service import DocLens
from ui.i18n import label, text
from ui.icons import icon

log = logging.getLogger(__name__)

ALL_DOCUMENTS = "*"  # the doc filter's value for "all documents" (no PDF is called "*")
# Temporary knowledge bases the evaluation makes and deletes again: never offered to other sessions.
_TEMPORARY_KB = re.compile(r"^(eval|bench) \d{8}-\d{6}$")
_language = "en"


def set_language(language: str) -> None:
    """The server's configured language (settings.ui.language): the fallback for bilingual labels."""
    global _language
    _language = "zh" if language == "zh" else "en"


def bi(en: str, zh: str) -> str:
    """A bilingual label: both languages, the configured one first (kept for the Settings tab)."""
    return f"{zh} · {en}" if _language == "zh" else f"{en} · {zh}"


def error_text(exc: BaseException, action: str, lang: str = "en") -> str:
    """One readable line for the user; unexpected errors are logged with their traceback."""
    if isinstance(exc, DocLensError):
        from ui.messages import translate_error
        return translate_error(str(exc), lang)
    log.error("unexpected error while trying to %s", action, exc_info=exc)
    return text(lang, "could not {action}: unexpected {name} (details are in the server log)",
                "无法{action}：意外的 {name}（详情见服务器日志）").format(
        action=action if lang != "zh" else _zh_action(action), name=exc.__class__.__name__)


def _zh_action(action: str) -> str:
    from ui.messages import ACTIONS_ZH
    return ACTIONS_ZH.get(action, action)


def warning_md(message: str) -> str:
    return f"{icon('warn')} {message}"


def is_temporary_kb(name: str) -> bool:
    return bool(_TEMPORARY_KB.match(name))


def kb_names(service: DocLens) -> list[str]:
    try:
        return [kb.name for kb in service.list_kbs() if not is_temporary_kb(kb.name)]
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


def all_documents_choice() -> tuple[Any, str]:
    return label("all documents", "全部文档"), ALL_DOCUMENTS


def doc_filter_dropdown(service: DocLens, kb: Optional[str], current: Optional[str]) -> Any:
    files = document_files(service, kb)
    choices = [all_documents_choice(), *files]
    return gr.update(choices=choices, value=current if current in files else ALL_DOCUMENTS)


def selected_file(doc_filter: Optional[str]) -> Optional[str]:
    """The doc-filter value as a file name, or None for all documents."""
    return None if not doc_filter or doc_filter == ALL_DOCUMENTS else doc_filter
