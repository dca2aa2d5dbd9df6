"""The Knowledge base tab: create, rename, delete and switch; upload PDFs; documents; quality checks."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Optional

import gradio as gr

from backend.errors import DocLensError
from backend.service import DocLens
from backend.types import ProgressEvent
from ui.common import document_files, error_text, kb_dropdown, warning_md
from ui.i18n import lang_of, text
from ui.icons import icon
from ui.kb_view import dict_markdown, doc_headers, document_status, job_progress_html, progress_text, results_markdown  # noqa: F401
from ui.upload_jobs import UploadJob, UploadJobs
from ui.web_files import ReceivedUploads, UploadRefused, file_entries

log = logging.getLogger(__name__)

EVAL_MODES = ["dense", "keyword", "hybrid", "rerank"]
POLL_SECONDS = 1.0


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


def user_key(request: Optional[gr.Request]) -> str:
    """Whose upload this is: the login name, or one anonymous user when the app runs without a login."""
    return (getattr(request, "username", None) or "") if request is not None else ""


def hidden() -> Any:
    return gr.update(visible=False)


class KBHandlers:
    def __init__(self, service: DocLens, uploads: Optional[ReceivedUploads] = None,
                 jobs: Optional[UploadJobs] = None):
        self.service = service
        self.uploads = uploads or ReceivedUploads()  # without the running Blocks nothing counts as received
        self.jobs = jobs or UploadJobs(self._ingest_received)

    def _ingest_received(self, kb: str, paths: list[Path], **options: Any) -> list:
        """The job's work: index, then delete the upload's copies (indexed or refused, they are used)."""
        try:
            return self.service.ingest(kb, paths, **options)
        finally:
            self.uploads.discard(paths)

    # -- knowledge bases ------------------------------------------------------------------------

    def refresh(self, kb: Optional[str], request: gr.Request = None) -> tuple[Any, Any]:
        """Outputs: kb picker, documents table."""
        update = kb_dropdown(self.service, kb)
        return update, self.documents_table(update["value"], request)

    def create(self, name: str, current: Optional[str], request: gr.Request = None) -> tuple:
        """Outputs: status, kb picker, documents table, name box."""
        lang = lang_of(request)
        try:
            kb = self.service.create_kb(name or "")
        except Exception as exc:
            return (warning_md(error_text(exc, "create the knowledge base", lang)), *self.refresh(current, request),
                    gr.skip())
        return (f"{icon('ok')} {text(lang, 'Created', '已创建')} **{kb.name}**", *self.refresh(kb.name, request), "")

    def rename(self, current: Optional[str], new_name: str, request: gr.Request = None) -> tuple:
        """Outputs: status, kb picker, documents table, name box."""
        lang = lang_of(request)
        if not current:
            return warning_md(choose_kb_first(lang)), gr.skip(), gr.skip(), gr.skip()
        try:
            kb = self.service.rename_kb(current, new_name or "")
        except Exception as exc:
            return warning_md(error_text(exc, "rename the knowledge base", lang)), gr.skip(), gr.skip(), gr.skip()
        return (f"{icon('ok')} {text(lang, 'Renamed', '已重命名')} **{current}** → **{kb.name}**",
                *self.refresh(kb.name, request), "")

    def ask_delete(self, current: Optional[str], request: gr.Request = None) -> tuple:
        """Outputs: confirmation row, confirmation text, the name the confirmation is about."""
        lang = lang_of(request)
        if not current:
            return hidden(), warning_md(choose_kb_first(lang)), None
        return gr.update(visible=True), warning_md(text(
            lang, "Delete **{name}** and all its documents? This cannot be undone.",
            "删除 **{name}** 及其全部文档？此操作无法撤销。").format(name=current)), current

    def delete(self, pending: Optional[str], request: gr.Request = None) -> tuple:
        """Outputs: status, confirmation row, kb picker, documents table, pending name. Deletes the knowledge
        base the confirmation named, never the picker's current value."""
        lang = lang_of(request)
        if not pending:
            return warning_md(choose_kb_first(lang)), hidden(), gr.skip(), gr.skip(), None
        try:
            self.service.delete_kb(pending)
        except Exception as exc:
            return warning_md(error_text(exc, "delete the knowledge base", lang)), hidden(), gr.skip(), gr.skip(), None
        return (f"{icon('deleted')} {text(lang, 'Deleted', '已删除')} **{pending}**", hidden(),
                *self.refresh(None, request), None)

    # -- documents ------------------------------------------------------------------------------

    def documents_table(self, kb: Optional[str], request: gr.Request = None) -> Any:
        lang = lang_of(request)
        rows = []
        if kb:
            running = self.jobs.running_in(kb)
            try:
                for d in self.service.documents(kb):
                    event = next((job.file_progress(d.file) for job in running if job.file_progress(d.file)), None)
                    rows.append([d.file, d.pages, d.chunks, d.figures, document_status(d, lang, event)])
            except Exception as exc:
                log.warning("documents of %r: %s", kb, error_text(exc, "list documents"))
        return gr.update(value=rows, headers=doc_headers(lang))

    def file_choices(self, kb: Optional[str]) -> Any:
        """No document is picked for the user: deleting must be a choice, not the default."""
        return gr.update(choices=document_files(self.service, kb), value=None)

    def ask_delete_document(self, kb: Optional[str], file: Optional[str], request: gr.Request = None) -> tuple:
        """Outputs: confirmation row, confirmation text, pending {"kb", "file"}."""
        lang = lang_of(request)
        if not kb or not file:
            return hidden(), warning_md(text(lang, "Choose a document first.", "请先选择文档。")), None
        return gr.update(visible=True), warning_md(text(
            lang, "Delete **{file}** from **{kb}**? This cannot be undone.",
            "从 **{kb}** 删除 **{file}**？此操作无法撤销。").format(file=file, kb=kb)), {"kb": kb, "file": file}

    def delete_document(self, pending: Optional[dict[str, str]], request: gr.Request = None) -> tuple:
        """Outputs: status, confirmation row, documents table, file picker, pending."""
        lang = lang_of(request)
        if not pending:
            return warning_md(text(lang, "Choose a document first.", "请先选择文档。")), hidden(), gr.skip(), gr.skip(), None
        kb = pending["kb"]
        try:
            doc = self.service.delete_document(kb, pending["file"])
        except Exception as exc:
            return warning_md(error_text(exc, "delete the document", lang)), hidden(), gr.skip(), gr.skip(), None
        return (f"{icon('deleted')} {text(lang, 'Deleted', '已删除')} **{doc.file}**", hidden(),
                self.documents_table(kb, request), self.file_choices(kb), None)

    def close_confirmation(self) -> tuple:
        """A confirmation is about what was selected when it was asked: any new selection closes it."""
        return hidden(), None

    # -- upload ---------------------------------------------------------------------------------

    def upload(self, kb: Optional[str], files: Any, request: gr.Request = None) -> tuple:
        """Start the upload as a server-side job. Outputs: ingest status, documents table, timer, files.
        Runs with preprocess=False: ``files`` are FileData dicts, which carry the user's original names.
        The chosen files stay in the box unless the job was accepted."""
        lang = lang_of(request)
        if not kb:  # the chosen files stay (not discarded) for when a knowledge base is chosen
            return warning_md(choose_kb_first(lang)), gr.skip(), gr.skip(), gr.skip()
        try:
            paths, names = self.uploads.admit(files)
        except UploadRefused as exc:
            log.info("KB tab upload refused: %s", exc)
            return warning_md(error_text(exc, "add the documents", lang)), gr.skip(), gr.skip(), None
        if not paths:
            return (warning_md(text(lang, "Add one or more PDF files first.", "请先添加 PDF 文件。")), gr.skip(),
                    gr.skip(), gr.skip())
        job = self.jobs.start(user_key(request), kb, paths, names)
        if job is None:
            return (warning_md(text(lang, "An upload into this knowledge base is already running; wait for it or "
                                    "cancel it.", "此知识库已有上传在进行；请等待或取消。")),
                    gr.skip(), gr.skip(), gr.skip())
        return job_progress_html(job, lang), gr.skip(), gr.update(active=True), None

    def poll(self, kb: Optional[str], request: gr.Request = None) -> tuple:
        """Each timer tick: the job's progress, or its results once it is done. Outputs: ingest status,
        documents table, file picker, timer."""
        lang = lang_of(request)
        job = self.jobs.get(user_key(request), kb)
        if job is None:
            return gr.skip(), gr.skip(), gr.skip(), gr.update(active=False)
        if job.running:
            return job_progress_html(job, lang), self.documents_table(kb, request), gr.skip(), gr.skip()
        return (self.job_result(job, lang), self.documents_table(kb, request), self.file_choices(kb),
                gr.update(active=False))

    def attach(self, kb: Optional[str], request: gr.Request = None) -> tuple:
        """On page load and KB switch: follow this user's running upload into that KB. Outputs: ingest
        status, timer."""
        job = self.jobs.get(user_key(request), kb)
        if job is None or not job.running:
            return "", gr.update(active=False)
        return job_progress_html(job, lang_of(request)), gr.update(active=True)

    @staticmethod
    def job_result(job: UploadJob, lang: str) -> str:
        if job.error is not None:
            return warning_md(error_text(job.error, "add the documents", lang))
        return results_markdown(job.results or [], lang)

    def cancel_upload(self, kb: Optional[str], request: gr.Request = None) -> Any:
        """Output: ingest status (the job's final result replaces it when the job ends)."""
        lang = lang_of(request)
        if self.jobs.cancel(user_key(request), kb):
            job = self.jobs.get(user_key(request), kb)
            return job_progress_html(job, lang) if job is not None else gr.skip()
        return text(lang, "No upload is running.", "没有正在进行的上传。")

    # -- quality checks -------------------------------------------------------------------------

    def selftest(self, kb: Optional[str], samples: float, request: gr.Request = None,
                 progress: gr.Progress = gr.Progress()) -> str:
        lang = lang_of(request)
        if not kb:
            return warning_md(choose_kb_first(lang))

        def on_progress(event: ProgressEvent) -> None:
            progress(event.fraction, desc=text(lang, "self-test question {i} of {n}", "自测问题 {i}/{n}").format(
                i=event.current, n=event.total))

        try:
            from backend.evaluation import selftest  # optional room: imported when asked for
            report = selftest(self.service, kb, samples=int(samples or 50), progress=on_progress)
        except Exception as exc:
            return warning_md(error_text(exc, "run the self-test", lang))
        return dict_markdown(report, lang)

    def evaluate(self, kb: Optional[str], qa_path: str, docs_dir: str, use_current_kb: bool, modes: list[str],
                 limit: float, request: gr.Request = None, progress: gr.Progress = gr.Progress()) -> str:
        lang = lang_of(request)
        try:
            qa, docs = eval_inputs(self.service.settings.ui.eval_dir, qa_path, docs_dir)
        except DocLensError as exc:
            return warning_md(error_text(exc, "run the evaluation", lang))

        def on_progress(event: ProgressEvent) -> None:
            progress(event.fraction if event.file_count else 0.0, desc=event.message or event.stage)

        try:
            from backend.evaluation import format_report, run_eval
            report = run_eval(self.service, qa, docs, kb_name=kb if use_current_kb else None,
                              modes=modes or EVAL_MODES, limit=int(limit or 0), progress=on_progress)
            return f"```text\n{format_report(report)}\n```"
        except Exception as exc:
            return warning_md(error_text(exc, "run the evaluation", lang))


def choose_kb_first(lang: str) -> str:
    return text(lang, "Choose or create a knowledge base first.", "请先选择或创建知识库。")
