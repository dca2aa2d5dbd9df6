"""The Knowledge base tab's trash: what was deleted, until when it is kept, restoring it and emptying the
trash (the layout is in ui/knowledge_bases/page.py ``build_trash``)."""

from __future__ import annotations

import time
from typing import Any, Optional

import gradio as gr

from backend.types import TrashEntry
from ui.common import actor, kb_dropdown, shows_errors, warning_md
from ui.i18n.strings import lang_of, text
from ui.icons import icon
from ui.knowledge_bases.handlers import KBHandlers, hidden
from ui.latex import md_literal


def trash_headers(lang: str) -> list[str]:
    return [
        text(lang, "id", "编号"),
        text(lang, "kind", "类型"),
        text(lang, "knowledge base", "知识库"),
        text(lang, "document", "文档"),
        text(lang, "deleted", "删除时间"),
        text(lang, "by", "删除者"),
        text(lang, "purged after", "永久删除时间"),
    ]


def when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds))


def kind_name(entry: TrashEntry, lang: str) -> str:
    return text(lang, "knowledge base", "知识库") if entry.kind == "kb" else text(lang, "document", "文档")


def choice(entry: TrashEntry, lang: str) -> tuple[str, str]:
    """What the picker shows for an entry (its value is the entry's id)."""
    what = entry.file or entry.kb
    return f"{what} · {kind_name(entry, lang)} · {entry.kb} · {when(entry.deleted_at)}", entry.id


class TrashHandlers:
    def __init__(self, kb_handlers: KBHandlers):
        self.kb_handlers = kb_handlers
        self.service = kb_handlers.service

    @shows_errors("list the trash", outputs=lambda line, **_: (gr.skip(), gr.skip()))
    def refresh(self, request: gr.Request = None) -> tuple[Any, Any]:
        """Outputs: trash table, trash picker (nothing picked: restoring must be a choice)."""
        lang = lang_of(request)
        entries = self.service.trash_entries(actor(request))
        rows = [
            [e.id, kind_name(e, lang), e.kb, e.file, when(e.deleted_at), e.deleted_by, when(e.expires_at)]
            for e in entries
        ]
        return (
            gr.update(value=rows, headers=trash_headers(lang)),
            gr.update(choices=[choice(e, lang) for e in entries], value=None),
        )

    @shows_errors(
        "restore from the trash",
        outputs=lambda line, **_: (warning_md(line), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()),
    )
    def restore(
        self, entry_id: Optional[str], new_name: str, current: Optional[str], request: gr.Request = None
    ) -> tuple:
        """Outputs: status, trash table, trash picker, name box, kb picker, documents table."""
        lang = lang_of(request)
        if not entry_id:
            nothing = warning_md(text(lang, "Choose something in the trash first.", "请先在回收站中选择。"))
            return nothing, gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
        entry = self.service.restore(entry_id, new_name=(new_name or "").strip() or None, who=actor(request))
        shown = entry.kb if entry.kind == "kb" else current
        restored = md_literal(entry.file or entry.kb)
        kb_update = kb_dropdown(self.service, shown, actor(request))
        return (
            f"{icon('ok')} {text(lang, 'Restored', '已恢复')} **{restored}**",
            *self.refresh(request),
            "",
            kb_update,
            self.kb_handlers.documents_table(kb_update["value"], request),
        )

    def ask_empty(self, request: gr.Request = None) -> tuple:
        """Outputs: confirmation row, confirmation text."""
        lang = lang_of(request)
        count = len(self.service.trash_entries(actor(request)))
        if not count:
            return hidden(), ""
        return (
            gr.update(visible=True),
            warning_md(
                text(
                    lang,
                    "Remove the {n} item(s) in the trash for good? This cannot be undone.",
                    "永久删除回收站中的 {n} 个项目？此操作无法撤销。",
                ).format(n=count)
            ),
        )

    @shows_errors("empty the trash", outputs=lambda line, **_: (warning_md(line), hidden(), gr.skip(), gr.skip()))
    def empty(self, request: gr.Request = None) -> tuple:
        """Outputs: status, confirmation row, trash table, trash picker."""
        lang = lang_of(request)
        purged = self.service.empty_trash(who=actor(request))
        line = text(lang, "Removed {n} item(s) for good.", "已永久删除 {n} 个项目。").format(n=len(purged))
        return f"{icon('deleted')} {line}", hidden(), *self.refresh(request)
