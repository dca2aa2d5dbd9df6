"""The Knowledge base tab's layout and wiring (the handlers are in ui/knowledge_bases/handlers.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import gradio as gr

from backend.service import DocLens
from ui.browser_storage import BROWSER_ID_KEY, stored_value
from ui.common import UNDOCUMENTED, ChangeSteps, kb_names, pick, wire_picker_matches
from ui.i18n.strings import label
from ui.knowledge_bases.documents_table import build_documents_table, offer_on_select
from ui.knowledge_bases.handlers import EVAL_MODES, POLL_SECONDS, KBHandlers
from ui.knowledge_bases.sharing import RoleControls, SharingHandlers, build_sharing_panel, wire_role_controls
from ui.knowledge_bases.trash import TrashHandlers, trash_headers


@dataclass
class KBTab:
    kb_active: gr.Dropdown
    changed: list  # events after which the Chat tab's pickers must be refreshed
    handlers: KBHandlers
    docs_table: gr.Dataframe
    doc_pick: gr.Dropdown
    ingest_status: gr.Markdown
    poll: gr.Timer
    browser: gr.Textbox  # this browser's id: whose uploads it may follow and cancel
    cancel_one: list  # the row and the picker to cancel one file of the running upload
    notices: list  # lines a handler said; blanked when the language changes
    show_trash: Callable[[Any, str], None]  # after an event: the trash drawn again (its headers: the language)

    def follow(self, event: Any, source: gr.Dropdown, name: str) -> Any:
        """After ``event``: make ``source``'s knowledge base the active one here and refresh the lists, with a
        running upload's progress beside them (a reload mid-upload), in one step: each event costs the
        browser a pass over all the page's components."""
        return event.then(
            self.handlers.shown,
            [source, self.browser, self.doc_pick],
            [*self.lists, *self.upload_progress],
            api_name=f"{name}_docs",
            **UNDOCUMENTED,
        )

    @property
    def lists(self) -> list:
        """The first outputs of ``KBHandlers.shown_with``: the KB picker, the documents table, the file picker."""
        return [self.kb_active, self.docs_table, self.doc_pick]

    @property
    def upload_progress(self) -> list:
        """What ``KBHandlers.attach`` writes: the status, the poll timer, the per-file cancel row and picker."""
        return [self.ingest_status, self.poll, *self.cancel_one]


def confirmation_row(elem_id: str, yes: Any, no: Any) -> tuple:
    with gr.Row(visible=False, elem_classes="dl-confirm", elem_id=elem_id) as row:
        message = gr.Markdown("")
        confirm = gr.Button(yes, variant="stop", elem_id=f"{elem_id}-yes", scale=0, min_width=140)
        keep = gr.Button(no, elem_id=f"{elem_id}-no", scale=0, min_width=100)
    return row, message, confirm, keep


def build_kb_tab(service: DocLens, handlers: KBHandlers) -> KBTab:
    choices = kb_names(service)
    with gr.Row(elem_classes="dl-kb-row"):
        kb_active = gr.Dropdown(
            label=label("Active knowledge base", "当前知识库"),
            choices=choices,
            value=pick(None, choices),
            allow_custom_value=True,
            elem_id="kb-active",
            scale=2,
            min_width=200,
        )
        refresh = gr.Button(label("Refresh", "刷新"), elem_id="kb-refresh", scale=0, min_width=90)
        new_name = gr.Textbox(
            label=label("New knowledge base", "新建知识库"),
            placeholder=label("name", "名称"),
            elem_id="kb-new-name",
            scale=2,
            min_width=180,
        )
        create = gr.Button(label("Create", "创建"), variant="primary", elem_id="kb-create", scale=1, min_width=100)
    with gr.Row(elem_classes="dl-kb-row") as owner_row:  # shown to the KB's owner (ui/knowledge_bases/sharing.py)
        rename_name = gr.Textbox(label=label("Rename to", "重命名为"), elem_id="kb-rename-name", scale=2, min_width=180)
        rename = gr.Button(label("Rename", "重命名"), elem_id="kb-rename", scale=1, min_width=100)
        delete = gr.Button(label("Delete…", "删除…"), variant="stop", elem_id="kb-delete", scale=1, min_width=100)
    kb_confirm_row, kb_confirm_text, kb_confirm, kb_keep = confirmation_row(
        "kb-delete-confirmation", label("Yes, delete", "确认删除"), label("Keep it", "保留")
    )
    kb_pending = gr.State(None)
    kb_status = gr.Markdown("", elem_id="kb-status")
    sharing = SharingHandlers(service)
    sharing_panel, access_summary = build_sharing_panel(sharing, kb_active)

    with gr.Group(elem_classes="dl-upload") as upload_group:
        files = gr.File(
            label=label("PDF files", "PDF 文件"),
            file_count="multiple",
            file_types=[".pdf"],
            elem_id="upload-files",
            height=140,
        )
        with gr.Row():
            start = gr.Button(label("Upload and index", "上传并索引"), variant="primary", elem_id="upload-start")
            cancel = gr.Button(label("Cancel", "取消"), variant="secondary", elem_id="upload-cancel")
        with gr.Row(visible=False, elem_id="upload-cancel-one") as cancel_row:
            cancel_pick = gr.Dropdown(
                label=label("Cancel one file (the others go on)", "取消单个文件（其他文件继续）"),
                choices=[],
                value=None,
                elem_id="upload-cancel-pick",
                scale=3,
                min_width=200,
            )
            cancel_file = gr.Button(label("Cancel this file", "取消此文件"), elem_id="upload-cancel-file", scale=1)
    ingest_status = gr.Markdown("", elem_id="ingest-status", min_height=80)
    poll = gr.Timer(POLL_SECONDS, active=False)
    # Without a login an upload belongs to the browser that started it (ui/knowledge_bases/handlers.py user_key)
    browser = stored_value(BROWSER_ID_KEY, "browser-id")  # ui/browser_storage.py

    # One listener per change (why: ui/common.py, above hide_if_shown), each part's step in it.
    kb_changed = ChangeSteps()
    kb_changed.add(lambda request: handlers.close_confirmation(), [], [kb_confirm_row, kb_pending])
    docs_table, doc_pick, doc_deleted, doc_delete_row = build_documents(handlers, kb_active, kb_status, kb_changed)
    controls = RoleControls(owner_row, [upload_group, doc_delete_row], sharing_panel, access_summary)
    wire_role_controls(kb_changed, sharing, kb_active, controls)
    kb_changed.wire(kb_active.change, "kb_changed")
    restored, show_trash, trash_status = build_trash(TrashHandlers(handlers), kb_active, docs_table)
    build_quality_checks(handlers, kb_active)

    created = create.click(
        handlers.create,
        [new_name, kb_active],
        [kb_status, kb_active, docs_table, new_name],
        api_name="kb_create",
        **UNDOCUMENTED,
    )
    new_name.submit(
        handlers.create,
        [new_name, kb_active],
        [kb_status, kb_active, docs_table, new_name],
        api_name="kb_create_submit",
        **UNDOCUMENTED,
    )
    renamed = rename.click(
        handlers.rename,
        [kb_active, rename_name],
        [kb_status, kb_active, docs_table, rename_name],
        api_name="kb_rename",
        **UNDOCUMENTED,
    )
    delete.click(
        handlers.ask_delete,
        kb_active,
        [kb_confirm_row, kb_confirm_text, kb_pending],
        api_name="kb_delete_ask",
        queue=False,
        **UNDOCUMENTED,
    )
    deleted = kb_confirm.click(
        handlers.delete,
        kb_pending,
        [kb_status, kb_confirm_row, kb_active, docs_table, kb_pending],
        api_name="kb_delete",
        **UNDOCUMENTED,
    )
    switched = kb_active.input(
        handlers.refresh, kb_active, [kb_active, docs_table], api_name="kb_switch", **UNDOCUMENTED
    )
    refreshed = refresh.click(
        handlers.refresh, kb_active, [kb_active, docs_table], api_name="kb_refresh", **UNDOCUMENTED
    )
    for event, name in ((deleted, "deleted"), (doc_deleted, "doc_deleted"), (refreshed, "refreshed")):
        show_trash(event, name)
    kb_keep.click(
        handlers.close_confirmation,
        None,
        [kb_confirm_row, kb_pending],
        api_name="kb_delete_keep",
        queue=False,
        **UNDOCUMENTED,
    )

    start.click(
        handlers.upload,
        [kb_active, files, browser],
        [ingest_status, docs_table, poll, files, browser],
        api_name="kb_upload",
        preprocess=False,
        **UNDOCUMENTED,
    )
    poll.tick(
        handlers.poll,
        [kb_active, browser],
        [ingest_status, docs_table, doc_pick, poll, cancel_row, cancel_pick],
        api_name="kb_upload_poll",
        show_progress="hidden",
        **UNDOCUMENTED,
    )
    cancel.click(
        handlers.cancel_upload,
        [kb_active, browser],
        [ingest_status, poll],
        api_name="kb_upload_cancel",
        queue=False,
        **UNDOCUMENTED,
    )
    cancel_file.click(
        handlers.cancel_file,
        [kb_active, cancel_pick, browser],
        [ingest_status, cancel_row, cancel_pick],
        api_name="kb_upload_cancel_file",
        queue=False,
        **UNDOCUMENTED,
    )
    # Not the poll ticks: the Chat tab refreshes its lists when it is shown (a tick a second would reload
    # its gallery and summary all through an upload).
    tab = KBTab(
        kb_active,
        [created, renamed, deleted, switched, refreshed, doc_deleted, restored],
        handlers,
        docs_table,
        doc_pick,
        ingest_status,
        poll,
        browser,
        [cancel_row, cancel_pick],
        [kb_status, trash_status],
        show_trash,
    )
    for event, name in (
        (created, "created"),
        (renamed, "renamed"),
        (deleted, "deleted"),
        (switched, "switched"),
        (refreshed, "refreshed"),
        (restored, "restored"),
    ):
        event.then(handlers.file_choices, kb_active, doc_pick, api_name=f"kb_{name}_files", **UNDOCUMENTED).then(
            handlers.attach,
            [kb_active, browser],
            [ingest_status, poll, cancel_row, cancel_pick],
            api_name=f"kb_{name}_attach",
            **UNDOCUMENTED,
        )
    return tab


def mode_label(mode: str) -> Any:
    return {
        "dense": label("dense (vectors)", "向量检索"),
        "keyword": label("keyword (BM25)", "关键词检索"),
        "hybrid": label("hybrid", "混合检索"),
        "rerank": label("hybrid + rerank", "混合检索 + 重排序"),
    }[mode]


def build_documents(
    handlers: KBHandlers, kb_active: gr.Dropdown, kb_status: gr.Markdown, kb_changed: ChangeSteps
) -> tuple:
    """The documents table and deleting one file (picked, then confirmed by name). ``kb_changed``: what the
    active KB's change does. Returns the table, the file picker, the deletion event and the row
    to delete a file (editors only)."""
    table_parts = build_documents_table(handlers.table, kb_active, kb_status, kb_changed)
    docs_table = table_parts.table
    with gr.Row(elem_classes="dl-kb-row") as delete_row:
        # A multiselect of one: Gradio 6.31's single-select list kept drawing the names of an earlier answer
        # when the names offered for what is typed shrank from a hundred to one.
        doc_pick = gr.Dropdown(
            label=label("Document", "文档"),
            choices=[],
            value=None,
            multiselect=True,
            max_choices=1,
            allow_custom_value=True,  # a row clicked in the table picks its file, among the names offered or not
            elem_id="doc-delete-pick",
            scale=3,
            min_width=200,
        )
        doc_delete = gr.Button(
            label("Delete file…", "删除文件…"), variant="stop", elem_id="doc-delete", scale=1, min_width=120
        )
    confirm_row, confirm_text, confirm, keep = confirmation_row(
        "doc-delete-confirmation", label("Yes, delete the file", "确认删除文件"), label("Keep it", "保留")
    )
    offer_on_select(table_parts, handlers.table, doc_pick)
    wire_picker_matches(handlers.service, doc_pick, kb_active, "kb_file_matches")
    pending = gr.State(None)
    doc_delete.click(
        handlers.ask_delete_document,
        [kb_active, doc_pick],
        [confirm_row, confirm_text, pending, kb_status],
        api_name="kb_delete_document_ask",
        queue=False,
        **UNDOCUMENTED,
    )
    deleted = confirm.click(
        handlers.delete_document,
        pending,
        [kb_status, confirm_row, docs_table, doc_pick, pending],
        api_name="kb_delete_document",
        **UNDOCUMENTED,
    )
    for closer, name in ((keep.click, "doc_delete_keep"), (doc_pick.change, "doc_delete_close")):
        closer(handlers.close_confirmation, None, [confirm_row, pending], api_name=name, queue=False, **UNDOCUMENTED)
    kb_changed.add(lambda request: handlers.close_confirmation(), [], [confirm_row, pending])
    return docs_table, doc_pick, deleted, delete_row


def build_trash(handlers: TrashHandlers, kb_active: gr.Dropdown, docs_table: gr.Dataframe) -> tuple:
    """What was deleted, restored or removed for good. Returns the restore event, ``show(event, name)``,
    which refreshes the trash after ``event``, and the trash's status line."""
    with gr.Accordion(label("Trash", "回收站"), open=False, elem_id="trash") as accordion:
        table = gr.Dataframe(
            headers=trash_headers("en"), value=[], interactive=False, elem_id="trash-table", wrap=True, max_height=240
        )
        with gr.Row(elem_classes="dl-kb-row"):
            pick = gr.Dropdown(
                label=label("Deleted item", "已删除的项目"), choices=[], value=None, elem_id="trash-pick", scale=3
            )
            new_name = gr.Textbox(
                label=label("Restore as (if its name is taken)", "恢复为（若原名已被占用）"),
                elem_id="trash-new-name",
                scale=2,
                min_width=180,
            )
            restore = gr.Button(label("Restore", "恢复"), variant="primary", elem_id="trash-restore", scale=1)
            empty = gr.Button(label("Empty trash…", "清空回收站…"), variant="stop", elem_id="trash-empty", scale=1)
        confirm_row, confirm_text, confirm, keep = confirmation_row(
            "trash-empty-confirmation", label("Yes, remove for good", "确认永久删除"), label("Keep them", "保留")
        )
        status = gr.Markdown("", elem_id="trash-status")
    restored = restore.click(
        handlers.restore,
        [pick, new_name, kb_active],
        [status, table, pick, new_name, kb_active, docs_table],
        api_name="kb_trash_restore",
        **UNDOCUMENTED,
    )
    empty.click(handlers.ask_empty, None, [confirm_row, confirm_text], api_name="kb_trash_empty_ask", **UNDOCUMENTED)
    confirm.click(handlers.empty, None, [status, confirm_row, table, pick], api_name="kb_trash_empty", **UNDOCUMENTED)
    keep.click(
        lambda: gr.update(visible=False), None, confirm_row, api_name="kb_trash_keep", queue=False, **UNDOCUMENTED
    )
    accordion.expand(handlers.refresh, None, [table, pick], api_name="kb_trash_show", **UNDOCUMENTED)

    def show(event: Any, name: str) -> None:
        event.then(handlers.refresh, None, [table, pick], api_name=f"kb_{name}_trash", **UNDOCUMENTED)

    return restored, show, status


def build_quality_checks(handlers: KBHandlers, kb_active: gr.Dropdown) -> None:
    with gr.Accordion(label("Quality checks", "质量检查"), open=False, elem_id="quality"):
        with gr.Row(elem_classes="dl-kb-row"):
            samples = gr.Number(
                label=label("Self-test samples", "自测样本数"), value=50, precision=0, minimum=1, scale=1, min_width=120
            )
            run_selftest = gr.Button(label("Run self-test", "运行自测"), elem_id="selftest-run", scale=1, min_width=140)
        with gr.Row(elem_classes="dl-kb-row"):
            qa_path = gr.Textbox(
                label=label("QA file (.jsonl in the bench folder)", "问答文件（评测文件夹中的 .jsonl）"),
                elem_id="eval-qa",
                scale=3,
                min_width=220,
            )
            docs_dir = gr.Textbox(
                label=label(
                    "PDF folder in the bench folder (default: beside the QA file)",
                    "评测文件夹中的 PDF 文件夹（默认：问答文件旁）",
                ),
                elem_id="eval-docs",
                scale=3,
                min_width=220,
            )
        with gr.Row(elem_classes="dl-kb-row"):
            modes = gr.CheckboxGroup(
                [(mode_label(m), m) for m in EVAL_MODES], value=EVAL_MODES, label=label("Modes", "模式"), scale=3
            )
            limit = gr.Number(
                label=label("Questions (0 = all)", "问题数（0 为全部）"),
                value=50,
                precision=0,
                minimum=0,
                scale=1,
                min_width=120,
            )
            use_current = gr.Checkbox(
                label=label("Use the active knowledge base", "使用当前知识库"), value=False, scale=1, min_width=160
            )
            run_eval = gr.Button(label("Run evaluation", "运行评测"), elem_id="eval-run", scale=1, min_width=140)
        quality_report = gr.Markdown("", elem_id="quality-report")
    run_selftest.click(
        handlers.selftest,
        [kb_active, samples],
        quality_report,
        api_name="kb_selftest",
        show_progress_on=[quality_report],
        **UNDOCUMENTED,
    )
    run_eval.click(
        handlers.evaluate,
        [kb_active, qa_path, docs_dir, use_current, modes, limit],
        quality_report,
        api_name="kb_eval",
        **UNDOCUMENTED,
    )
