"""The Knowledge base tab: create, rename, delete and switch; upload PDFs; documents; quality checks."""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import gradio as gr

from backend.errors import DocLensError
from backend.service import DocLens
from backend.types import IngestResult, ProgressEvent
from ui.common import bi, document_files, error_text, kb_dropdown, kb_names, pick, warning_md
from ui.web_files import ReceivedUploads, UploadRefused, file_entries

log = logging.getLogger("doclens.ui")

DOC_HEADERS = ["file · 文件", "pages · 页数", "chunks · 分块", "figures · 图表", "status · 状态"]
STAGE_LABELS = {"file": "starting", "parse": "parse page", "ocr": "OCR page", "embed": "embedding",
                "store": "storing", "done": "done"}
EVAL_MODES = ["dense", "keyword", "hybrid", "rerank"]


@dataclass
class KBTab:
    kb_active: gr.Dropdown
    changed: list  # events after which the Chat tab's pickers must be refreshed
    handlers: "KBHandlers"
    docs_table: gr.Dataframe
    doc_pick: gr.Dropdown

    def follow(self, event: Any, source: gr.Dropdown, name: str) -> Any:
        """After ``event``: make ``source``'s knowledge base the active one here and refresh the lists."""
        return event.then(self.handlers.refresh, source, [self.kb_active, self.docs_table],
                          api_name=f"{name}_docs", api_visibility="undocumented").then(
            self.handlers.file_choices, self.kb_active, self.doc_pick, api_name=f"{name}_files",
            api_visibility="undocumented")


class CancelFlags:
    """One cancel flag per browser session, so a cancel only stops that session's upload."""

    def __init__(self) -> None:
        self._flags: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def fresh(self, session: str) -> threading.Event:
        with self._lock:
            self._flags[session] = threading.Event()
            return self._flags[session]

    def cancel(self, session: str) -> bool:
        with self._lock:
            flag = self._flags.get(session)
        if flag is None:
            return False
        flag.set()
        return True


def session_key(request: Optional[gr.Request]) -> str:
    return (request.session_hash if request is not None else None) or "default"


def uploaded_files(files: Any) -> tuple[list[Path], list[str]]:
    """Paths and the user's original file names, from raw FileData dicts or plain paths (not checked:
    web handlers go through ``ReceivedUploads.admit``)."""
    entries = file_entries(files)
    return [Path(path) for path, _ in entries], [Path(name).name for _, name in entries]


def eval_inputs(root_setting: str, qa_path: str, docs_dir: str) -> tuple[Path, Path]:
    """The QA file and PDF folder a web user asked for, only inside the operator's bench folder
    (``ui.eval_dir``); the same message whether a path outside it exists or not."""
    if not root_setting.strip():
        raise DocLensError("evaluation from the web page reads only the bench folder the operator sets in "
                           "ui.eval_dir (DOCLENS_UI_EVAL_DIR); it is not set. Run `main.py eval` instead.")
    root = Path(os.path.realpath(Path(root_setting).expanduser()))
    qa = _inside(root, qa_path)
    if qa is None or not qa.is_file():
        raise DocLensError(f"QA file not found in the bench folder: {(qa_path or '').strip()}")
    docs = _inside(root, docs_dir) if (docs_dir or "").strip() else qa.parent
    if docs is None or not docs.is_dir():
        raise DocLensError(f"PDF folder not found in the bench folder: {(docs_dir or '').strip()}")
    return qa, docs


def _inside(root: Path, typed: str) -> Optional[Path]:
    typed = (typed or "").strip()
    if not typed:
        return None
    real = Path(os.path.realpath(root / typed))  # an absolute path replaces root, then must lie inside it
    return real if real.is_relative_to(root) else None


def progress_text(event: ProgressEvent) -> str:
    """e.g. "file 1 of 2 · a.pdf · OCR page 3 of 10"."""
    text = f"file {event.file_index} of {event.file_count}" + (f" · {event.file}" if event.file else "")
    stage = STAGE_LABELS.get(event.stage, event.stage)
    if event.total and event.stage in ("parse", "ocr"):
        return f"{text} · {stage} {event.current} of {event.total}"
    if event.total and event.stage in ("embed", "store"):
        return f"{text} · {stage} {event.current}/{event.total}"
    return f"{text} · {stage if event.stage in STAGE_LABELS else event.message or stage}"


def results_markdown(results: Sequence[IngestResult]) -> str:
    if not results:
        return warning_md(bi("No PDF was processed.", "没有处理任何 PDF。"))
    icons = {"indexed": "✅", "duplicate": "♻️", "replaced": "🔁", "failed": "❌", "cancelled": "⏹️"}
    lines = ["| file · 文件 | result · 结果 | pages · 页 | chunks · 块 | figures · 图 | details · 说明 |",
             "|---|---|---|---|---|---|"]
    for r in results:
        detail = r.error or (f"{r.ocr_pages} OCR pages, {r.seconds:.1f} s" if r.ok else "")
        lines.append(f"| {_cell(r.file)} | {icons.get(r.status, '')} {r.status} | {r.pages} | {r.chunks} | "
                     f"{r.figures} | {_cell(detail)} |")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def dict_markdown(report: dict[str, Any]) -> str:
    rows = "\n".join(f"| {_cell(key)} | {_cell(value)} |" for key, value in report.items())
    return f"| metric · 指标 | value · 值 |\n|---|---|\n{rows}"


class KBHandlers:
    def __init__(self, service: DocLens, uploads: Optional[ReceivedUploads] = None):
        self.service = service
        self.cancel_flags = CancelFlags()
        self.uploads = uploads or ReceivedUploads()  # without the running Blocks nothing counts as received

    # -- knowledge bases ------------------------------------------------------------------------

    def refresh(self, kb: Optional[str]) -> tuple[Any, Any]:
        """Outputs: kb picker, documents table."""
        update = kb_dropdown(self.service, kb)
        return update, self.documents_table(update["value"])

    def create(self, name: str, current: Optional[str]) -> tuple:
        """Outputs: status, kb picker, documents table, name box."""
        try:
            kb = self.service.create_kb(name or "")
        except Exception as exc:
            return (warning_md(error_text(exc, "create the knowledge base")), *self.refresh(current), gr.skip())
        return (f"✅ {bi('Created', '已创建')} **{kb.name}**", *self.refresh(kb.name), "")

    def rename(self, current: Optional[str], new_name: str) -> tuple:
        """Outputs: status, kb picker, documents table, name box."""
        if not current:
            return warning_md(bi("Choose a knowledge base first.", "请先选择知识库。")), gr.skip(), gr.skip(), gr.skip()
        try:
            kb = self.service.rename_kb(current, new_name or "")
        except Exception as exc:
            return warning_md(error_text(exc, "rename the knowledge base")), gr.skip(), gr.skip(), gr.skip()
        return (f"✅ {bi('Renamed', '已重命名')} **{current}** → **{kb.name}**", *self.refresh(kb.name), "")

    def ask_delete(self, current: Optional[str]) -> tuple:
        """Outputs: confirmation row, confirmation text."""
        if not current:
            return gr.update(visible=False), warning_md(bi("Choose a knowledge base first.", "请先选择知识库。"))
        return gr.update(visible=True), (
            f"⚠️ {bi('Delete', '删除')} **{current}** {bi('and all its documents? This cannot be undone.', '及其全部文档？此操作无法撤销。')}")

    def delete(self, current: Optional[str]) -> tuple:
        """Outputs: status, confirmation row, kb picker, documents table."""
        hidden = gr.update(visible=False)
        if not current:
            return warning_md(bi("Choose a knowledge base first.", "请先选择知识库。")), hidden, gr.skip(), gr.skip()
        try:
            self.service.delete_kb(current)
        except Exception as exc:
            return warning_md(error_text(exc, "delete the knowledge base")), hidden, gr.skip(), gr.skip()
        return (f"🗑️ {bi('Deleted', '已删除')} **{current}**", hidden, *self.refresh(None))

    # -- documents ------------------------------------------------------------------------------

    def documents_table(self, kb: Optional[str]) -> Any:
        rows = []
        if kb:
            try:
                rows = [[d.file, d.pages, d.chunks, d.figures, d.status] for d in self.service.documents(kb)]
            except Exception as exc:
                log.warning("documents of %r: %s", kb, error_text(exc, "list documents"))
        return gr.update(value=rows, headers=DOC_HEADERS)

    def file_choices(self, kb: Optional[str]) -> Any:
        choices = document_files(self.service, kb)
        return gr.update(choices=choices, value=choices[0] if choices else None)

    def delete_document(self, kb: Optional[str], file: Optional[str]) -> tuple:
        """Outputs: status, documents table, file picker."""
        if not kb or not file:
            return warning_md(bi("Choose a document first.", "请先选择文档。")), gr.skip(), gr.skip()
        try:
            doc = self.service.delete_document(kb, file)
        except Exception as exc:
            return warning_md(error_text(exc, "delete the document")), gr.skip(), gr.skip()
        return f"🗑️ {bi('Deleted', '已删除')} **{doc.file}**", self.documents_table(kb), self.file_choices(kb)

    # -- upload ---------------------------------------------------------------------------------

    def upload(self, kb: Optional[str], files: Any, request: gr.Request,
               progress: gr.Progress = gr.Progress()) -> tuple:
        """Outputs: ingest status, documents table, file picker. Runs with preprocess=False: ``files``
        are FileData dicts, which carry the user's original names."""
        if not kb:  # the chosen files stay (not discarded) for when a knowledge base is chosen
            return warning_md(bi("Choose or create a knowledge base first.", "请先选择或创建知识库。")), gr.skip(), gr.skip()
        try:
            paths, names = self.uploads.admit(files)
        except UploadRefused as exc:
            log.info("KB tab upload refused: %s", exc)
            return warning_md(str(exc)), gr.skip(), gr.skip()
        if not paths:
            return warning_md(bi("Add one or more PDF files first.", "请先添加 PDF 文件。")), gr.skip(), gr.skip()
        cancel = self.cancel_flags.fresh(session_key(request))
        progress(0.0, desc=f"file 1 of {len(paths)} · {names[0]} · starting")

        def on_progress(event: ProgressEvent) -> None:
            progress(event.fraction, desc=progress_text(event))

        try:
            results = self.service.ingest(kb, paths, progress=on_progress, cancel=cancel, display_names=names)
        except Exception as exc:
            return warning_md(error_text(exc, "add the documents")), self.documents_table(kb), self.file_choices(kb)
        finally:
            self.uploads.discard(paths)  # indexed or refused: the upload's copy is not needed any more
        return results_markdown(results), self.documents_table(kb), self.file_choices(kb)

    def cancel_upload(self, request: gr.Request) -> str:
        if self.cancel_flags.cancel(session_key(request)):
            return f"⏹️ {bi('Cancelling after the current page…', '将在当前页后取消…')}"
        return bi("No upload is running.", "没有正在进行的上传。")

    # -- quality checks -------------------------------------------------------------------------

    def selftest(self, kb: Optional[str], samples: float) -> str:
        if not kb:
            return warning_md(bi("Choose a knowledge base first.", "请先选择知识库。"))
        try:
            from backend.evaluation import selftest  # optional room: imported when asked for
            report = selftest(self.service, kb, samples=int(samples or 50))
        except Exception as exc:
            return warning_md(error_text(exc, "run the self-test"))
        return dict_markdown(report)

    def evaluate(self, kb: Optional[str], qa_path: str, docs_dir: str, use_current_kb: bool, modes: list[str],
                 limit: float, progress: gr.Progress = gr.Progress()) -> str:
        try:
            qa, docs = eval_inputs(self.service.settings.ui.eval_dir, qa_path, docs_dir)
        except DocLensError as exc:
            return warning_md(str(exc))

        def on_progress(event: ProgressEvent) -> None:
            progress(event.fraction if event.file_count else 0.0, desc=event.message or event.stage)

        try:
            from backend.evaluation import format_report, run_eval
            report = run_eval(self.service, qa, docs, kb_name=kb if use_current_kb else None,
                              modes=modes or EVAL_MODES, limit=int(limit or 0), progress=on_progress)
            return f"```text\n{format_report(report)}\n```"
        except Exception as exc:
            return warning_md(error_text(exc, "run the evaluation"))


def build_kb_tab(service: DocLens, uploads: Optional[ReceivedUploads] = None) -> KBTab:
    handlers = KBHandlers(service, uploads)
    choices = kb_names(service)
    with gr.Row(elem_classes="dl-kb-row"):
        kb_active = gr.Dropdown(label=bi("Active knowledge base", "当前知识库"), choices=choices,
                                value=pick(None, choices), allow_custom_value=True, elem_id="kb-active", scale=2,
                                min_width=200)
        new_name = gr.Textbox(label=bi("New knowledge base", "新建知识库"), placeholder=bi("name", "名称"),
                              elem_id="kb-new-name", scale=2, min_width=180)
        create = gr.Button(bi("Create", "创建"), variant="primary", elem_id="kb-create", scale=1, min_width=100)
    with gr.Row(elem_classes="dl-kb-row"):
        rename_name = gr.Textbox(label=bi("Rename to", "重命名为"), elem_id="kb-rename-name", scale=2,
                                 min_width=180)
        rename = gr.Button(bi("Rename", "重命名"), elem_id="kb-rename", scale=1, min_width=100)
        delete = gr.Button(bi("Delete…", "删除…"), variant="stop", elem_id="kb-delete", scale=1, min_width=100)
    with gr.Row(visible=False, elem_classes="dl-confirm", elem_id="kb-delete-confirmation") as confirm_row:
        confirm_text = gr.Markdown("")
        confirm = gr.Button(bi("Yes, delete", "确认删除"), variant="stop", elem_id="kb-delete-confirm", scale=0,
                            min_width=140)
        keep = gr.Button(bi("Keep it", "保留"), elem_id="kb-delete-keep", scale=0, min_width=100)
    kb_status = gr.Markdown("", elem_id="kb-status")

    with gr.Group(elem_classes="dl-upload"):
        files = gr.File(label=bi("PDF files", "PDF 文件"), file_count="multiple", file_types=[".pdf"],
                        elem_id="upload-files", height=140)
        with gr.Row():
            start = gr.Button(bi("Upload and index", "上传并索引"), variant="primary", elem_id="upload-start")
            cancel = gr.Button(bi("Cancel", "取消"), variant="secondary", elem_id="upload-cancel")
    ingest_status = gr.Markdown("", elem_id="ingest-status", min_height=80)

    docs_table = gr.Dataframe(headers=DOC_HEADERS, value=[], interactive=False, elem_id="docs-table",
                              label=bi("Documents", "文档"), wrap=True, max_height=320)
    with gr.Row(elem_classes="dl-kb-row"):
        doc_pick = gr.Dropdown(label=bi("Document", "文档"), choices=[], allow_custom_value=True,
                               elem_id="doc-delete-pick", scale=3, min_width=200)
        doc_delete = gr.Button(bi("Delete file", "删除文件"), variant="stop", elem_id="doc-delete", scale=1,
                               min_width=120)

    with gr.Accordion(bi("Quality checks", "质量检查"), open=False, elem_id="quality"):
        with gr.Row(elem_classes="dl-kb-row"):
            samples = gr.Number(label=bi("Self-test samples", "自测样本数"), value=50, precision=0, minimum=1,
                                scale=1, min_width=120)
            run_selftest = gr.Button(bi("Run self-test", "运行自测"), elem_id="selftest-run", scale=1,
                                     min_width=140)
        with gr.Row(elem_classes="dl-kb-row"):
            qa_path = gr.Textbox(label=bi("QA file (.jsonl in the bench folder)", "问答文件（评测文件夹中的 .jsonl）"),
                                 elem_id="eval-qa", scale=3, min_width=220)
            docs_dir = gr.Textbox(label=bi("PDF folder in the bench folder (default: beside the QA file)",
                                           "评测文件夹中的 PDF 文件夹"),
                                  elem_id="eval-docs", scale=3, min_width=220)
        with gr.Row(elem_classes="dl-kb-row"):
            modes = gr.CheckboxGroup(EVAL_MODES, value=EVAL_MODES, label=bi("Modes", "模式"), scale=3)
            limit = gr.Number(label=bi("Questions (0 = all)", "问题数（0 为全部）"), value=50, precision=0,
                              minimum=0, scale=1, min_width=120)
            use_current = gr.Checkbox(label=bi("Use the active knowledge base", "使用当前知识库"), value=False,
                                      scale=1, min_width=160)
            run_eval = gr.Button(bi("Run evaluation", "运行评测"), elem_id="eval-run", scale=1, min_width=140)
        quality_report = gr.Markdown("", elem_id="quality-report")

    undocumented = {"api_visibility": "undocumented"}
    created = create.click(handlers.create, [new_name, kb_active], [kb_status, kb_active, docs_table, new_name],
                           api_name="kb_create", **undocumented)
    new_name.submit(handlers.create, [new_name, kb_active], [kb_status, kb_active, docs_table, new_name],
                    api_name="kb_create_submit", **undocumented)
    renamed = rename.click(handlers.rename, [kb_active, rename_name], [kb_status, kb_active, docs_table, rename_name],
                           api_name="kb_rename", **undocumented)
    delete.click(handlers.ask_delete, kb_active, [confirm_row, confirm_text], api_name="kb_delete_ask",
                 queue=False, **undocumented)
    keep.click(lambda: gr.update(visible=False), None, confirm_row, api_name="kb_delete_keep", queue=False,
               **undocumented)
    deleted = confirm.click(handlers.delete, kb_active, [kb_status, confirm_row, kb_active, docs_table],
                            api_name="kb_delete", **undocumented)
    switched = kb_active.input(handlers.refresh, kb_active, [kb_active, docs_table], api_name="kb_switch",
                               **undocumented)
    uploaded = start.click(handlers.upload, [kb_active, files], [ingest_status, docs_table, doc_pick],
                           api_name="kb_upload", preprocess=False, show_progress="full",
                           concurrency_id="ingest", concurrency_limit=1,
                           show_progress_on=[ingest_status], **undocumented)
    cancel.click(handlers.cancel_upload, None, kb_status, api_name="kb_upload_cancel", queue=False, **undocumented)
    uploaded.then(lambda: None, None, files, api_name="kb_upload_reset", queue=False, **undocumented)
    doc_deleted = doc_delete.click(handlers.delete_document, [kb_active, doc_pick], [kb_status, docs_table, doc_pick],
                                   api_name="kb_delete_document", **undocumented)
    run_selftest.click(handlers.selftest, [kb_active, samples], quality_report, api_name="kb_selftest",
                       **undocumented)
    run_eval.click(handlers.evaluate, [kb_active, qa_path, docs_dir, use_current, modes, limit], quality_report,
                   api_name="kb_eval", **undocumented)
    for event, name in ((created, "created"), (renamed, "renamed"), (deleted, "deleted"), (switched, "switched")):
        event.then(handlers.file_choices, kb_active, doc_pick, api_name=f"kb_{name}_files", **undocumented)
    return KBTab(kb_active, [created, renamed, deleted, switched, uploaded, doc_deleted], handlers, docs_table,
                 doc_pick)
