"""Who may do what to the active knowledge base, when the app has logins (issue 27 item 3): the controls a
login's role allows (readers ask only, editors also add and delete documents, owners also rename, share and
delete), and the owner's sharing panel. Hiding is only for clarity: the service checks every call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import gradio as gr

from backend.service import DocLens, Role
from ui.common import UNDOCUMENTED, ChangeSteps, actor, shows_errors, warning_md
from ui.i18n.strings import label, lang_of, text
from ui.icons import icon
from ui.knowledge_bases.handlers import hidden
from ui.latex import md_literal

EVERYONE = "*"


@dataclass
class RoleControls:
    """What a role shows: the owner's row (rename, delete), the editors' parts (upload, delete a file) and
    the sharing panel with its summary line."""

    owner_row: Any
    editor_parts: list
    panel: gr.Accordion
    summary: gr.Markdown


def role_name(role: str, lang: str) -> str:
    names = {"owner": ("owner", "所有者"), "editor": ("editor", "编辑者"), "reader": ("reader", "读者")}
    english, chinese = names.get(role, (role, role))
    return text(lang, english, chinese)


def access_line(grant: dict, role: str, lang: str) -> str:
    """ "Owner: alice · shared with: bob (reader), everyone (editor) · you: editor"."""
    shares = [
        f"{text(lang, 'everyone', '所有人') if who == EVERYONE else md_literal(who)} ({role_name(r, lang)})"
        for who, r in sorted(grant.get("shares", {}).items())
    ]
    shared = ", ".join(shares) or text(lang, "nobody (private)", "无人（私有）")
    return text(lang, "Owner: {o} · shared with: {s} · you: {r}", "所有者：{o} · 共享给：{s} · 你：{r}").format(
        o=md_literal(grant.get("owner", "")), s=shared, r=role_name(role, lang)
    )


class SharingHandlers:
    editor_parts = 2  # the upload box and the file-deletion row (ui/knowledge_bases/page.py)

    def __init__(self, service: DocLens):
        self.service = service

    def controls(self, kb: Optional[str], request: gr.Request = None) -> tuple:
        """Outputs: owner row, each editor part, sharing panel, its summary line. Without logins: all shown,
        no panel."""
        who, lang = actor(request), lang_of(request)
        if not self.service.roles.enforced or not kb:
            return (gr.update(visible=True), *[gr.update(visible=True)] * self.editor_parts, hidden(), "")
        role = self.service.role(kb, who)
        rank = Role[role.upper()]
        line = access_line(self.service.access(kb, who), role, lang) if rank else ""
        return (
            gr.update(visible=rank >= Role.OWNER),
            *[gr.update(visible=rank >= Role.EDITOR)] * self.editor_parts,
            gr.update(visible=rank >= Role.READER),
            line,
        )

    @shows_errors("share the knowledge base", outputs=lambda line, **_: (warning_md(line), gr.skip()))
    def share(self, kb: Optional[str], login: str, role: str, request: gr.Request = None) -> tuple[str, Any]:
        """Outputs: status, summary line."""
        who, lang = actor(request), lang_of(request)
        if not kb:
            return warning_md(text(lang, "Choose a knowledge base first.", "请先选择知识库。")), gr.skip()
        grant = self.service.share(kb, (login or "").strip(), role or "", who=who)
        done = text(lang, "Shared **{kb}**", "已共享 **{kb}**").format(kb=md_literal(kb))
        return f"{icon('ok')} {done}", access_line(grant, self.service.role(kb, who), lang)


def build_sharing_panel(handlers: SharingHandlers, kb_active: gr.Dropdown) -> tuple[gr.Accordion, gr.Markdown]:
    """The panel: who owns the knowledge base and who it is shared with; its owner shares it further."""
    with gr.Accordion(label("Sharing", "共享"), open=False, visible=False, elem_id="kb-sharing") as panel:
        summary = gr.Markdown("", elem_id="kb-access")
        with gr.Row(elem_classes="dl-kb-row"):
            login = gr.Textbox(
                label=label("Login (or * for everyone)", "登录名（* 表示所有人）"),
                elem_id="kb-share-login",
                scale=2,
                min_width=180,
            )
            role = gr.Radio(
                [
                    (label("reader", "读者"), "reader"),
                    (label("editor", "编辑者"), "editor"),
                    (label("none", "无"), "none"),
                ],
                value="reader",
                label=label("Role", "角色"),
                elem_id="kb-share-role",
                scale=2,
            )
            share = gr.Button(label("Share", "共享"), elem_id="kb-share", scale=1, min_width=100)
        status = gr.Markdown("", elem_id="kb-share-status")
    share.click(handlers.share, [kb_active, login, role], [status, summary], api_name="kb_share", **UNDOCUMENTED)
    return panel, summary


def wire_role_controls(
    kb_changed: ChangeSteps, handlers: SharingHandlers, kb_active: gr.Dropdown, controls: RoleControls
) -> None:
    """After each change of the active KB: what the login's role there allows."""
    kb_changed.add(
        handlers.controls, [kb_active], [controls.owner_row, *controls.editor_parts, controls.panel, controls.summary]
    )
