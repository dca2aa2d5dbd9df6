"""The Knowledge base tab: create, rename, delete and switch; upload PDFs; documents; quality checks."""

from __future__ import annotations

import logging
import os
import uuid
from pathlib import Path
from typing import Any, Optional

import gradio as gr

from backend.errors import DocLensError
from backend.service import DocLens
from backend.types import SEARCH_MODES, ProgressEvent
from ui.common import DocFilter, actor, document_files, error_text, kb_dropdown, selected_file, shows_errors, warning_md
from ui.i18n.strings import lang_of, text
from ui.icons import icon
from ui.knowledge_bases.documents_table import DocumentsTable
from ui.knowledge_bases.upload_jobs import RESUMED, UploadJob, UploadJobs
from ui.knowledge_bases.view import (
    another_upload_runs,
    choose_document_first,
    choose_kb_first,
    dict_markdown,
    doc_headers,
    job_progress_html,
    results_markdown,
    upload_runs_already,
)
from ui.latex import md_literal
from ui.web_files import ReceivedUploads, UploadRefused

log = logging.getLogger(__name__)

EVAL_MODES = list(SEARCH_MODES)
POLL_SECONDS = 1.0


def eval_inputs(root_setting: str, qa_path: str, docs_dir: str) -> tuple[Path, Path]:
    """The QA file and PDF folder a web user asked for, only inside the operator's bench folder
    (``ui.eval_dir``); the same message whether a path outside it exists or not."""
    if not root_setting.strip():
        raise DocLensError(
            "evaluation from the web page reads only the bench folder the operator sets in "
            "ui.eval_dir (DOCLENS_UI_EVAL_DIR); it is not set. Run `main.py eval` instead."
        )
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


def user_key(request: Optional[gr.Request], browser: Optional[str] = None) -> str:
    """Whose upload this is: the login name; without a login the browser that started it (an id kept in
    its local storage, so a reload finds the job again but another browser does not own it)."""
    name = getattr(request, "username", None) if request is not None else None
    if name:
        return f"user:{name}"
    return f"browser:{browser}" if browser else ""


def new_browser_id() -> str:
    return uuid.uuid4().hex


def hidden() -> Any:
    return gr.update(visible=False)


class KBHandlers:
    def __init__(self, service: DocLens, uploads: Optional[ReceivedUploads] = None, jobs: Optional[UploadJobs] = None):
        self.service = service
        self.uploads = uploads or ReceivedUploads()  # without the running Blocks nothing counts as received
        self.jobs = jobs or UploadJobs(self._ingest_received)
        self.table = DocumentsTable(service, self.jobs)

    def _ingest_received(self, kb: str, paths: list[Path], **options: Any) -> list:
        """The job's work: index, then delete the upload's copies (indexed or refused, they are used)."""
        try:
            return self.service.ingest(kb, paths, **options)
        finally:
            self.uploads.discard(paths)

    @property
    def retention_days(self) -> float:
        return self.service.settings.trash.retention_days

    @property
    def model_preparing(self) -> bool:
        return self.service.model_state.preparing

    # -- knowledge bases ------------------------------------------------------------------------

    def refresh(self, kb: Optional[str], request: gr.Request = None) -> tuple[Any, Any]:
        """Outputs: kb picker, documents table."""
        update = kb_dropdown(self.service, kb, actor(request))
        return update, self.documents_table(update["value"], request)

    def shown(self, kb: Optional[str], browser: Optional[str], picked: DocFilter, request: gr.Request = None) -> tuple:
        """``kb`` (or the first one, if it is gone) shown: ``shown_with`` its picker, read afresh."""
        return self.shown_with(kb_dropdown(self.service, kb, actor(request)), browser, request, picked)

    def shown_with(self, picker: dict, browser: Optional[str], request: gr.Request, picked: DocFilter = None) -> tuple:
        """The KB picker's update ``picker`` (a page load reads the list once for both tabs) shown: the picker,
        its KB's documents table and file picker (nothing picked), then ``attach``'s outputs (its upload). An
        empty pick is not written again: to Gradio that is a change, a server step of its own."""
        kb = picker["value"]
        files = self.file_choices(kb, request)
        if not selected_file(picked):
            files.pop("value")
        return (picker, self.documents_table(kb, request), files, *self.attach(kb, browser, request))

    @shows_errors(
        "create the knowledge base",
        outputs=lambda line, self, current, request, **_: (
            warning_md(line),
            *self.refresh(current, request),
            gr.skip(),
        ),
    )
    def create(self, name: str, current: Optional[str], request: gr.Request = None) -> tuple:
        """Outputs: status, kb picker, documents table, name box."""
        lang = lang_of(request)
        kb = self.service.create_kb(name or "", who=actor(request))
        return (
            f"{icon('ok')} {text(lang, 'Created', '已创建')} **{md_literal(kb.name)}**",
            *self.refresh(kb.name, request),
            "",
        )

    @shows_errors(
        "rename the knowledge base", outputs=lambda line, **_: (warning_md(line), gr.skip(), gr.skip(), gr.skip())
    )
    def rename(self, current: Optional[str], new_name: str, request: gr.Request = None) -> tuple:
        """Outputs: status, kb picker, documents table, name box."""
        lang = lang_of(request)
        if not current:
            return warning_md(choose_kb_first(lang)), gr.skip(), gr.skip(), gr.skip()
        kb = self.service.rename_kb(current, new_name or "", who=actor(request))
        return (
            f"{icon('ok')} {text(lang, 'Renamed', '已重命名')} **{md_literal(current)}** → **{md_literal(kb.name)}**",
            *self.refresh(kb.name, request),
            "",
        )

    def ask_delete(self, current: Optional[str], request: gr.Request = None) -> tuple:
        """Outputs: confirmation row, confirmation text, the name the confirmation is about."""
        lang = lang_of(request)
        if not current:
            return hidden(), warning_md(choose_kb_first(lang)), None
        return (
            gr.update(visible=True),
            warning_md(
                text(
                    lang,
                    "Delete **{name}** and all its documents? They stay in the trash for {days:g} days.",
                    "删除 **{name}** 及其全部文档？它们会在回收站中保留 {days:g} 天。",
                ).format(name=md_literal(current), days=self.retention_days)
            ),
            current,
        )

    @shows_errors(
        "delete the knowledge base", outputs=lambda line, **_: (warning_md(line), hidden(), gr.skip(), gr.skip(), None)
    )
    def delete(self, pending: Optional[str], request: gr.Request = None) -> tuple:
        """Outputs: status, confirmation row, kb picker, documents table, pending name. Deletes the knowledge
        base the confirmation named, never the picker's current value."""
        lang = lang_of(request)
        if not pending:
            return warning_md(choose_kb_first(lang)), hidden(), gr.skip(), gr.skip(), None
        self.service.delete_kb(pending, who=actor(request))
        return (
            f"{icon('deleted')} {text(lang, 'Deleted', '已删除')} **{md_literal(pending)}** "
            + text(lang, "(restore it from the trash below)", "（可在下方回收站中恢复）"),
            hidden(),
            *self.refresh(None, request),
            None,
        )

    # -- documents ------------------------------------------------------------------------------

    @shows_errors("list documents", outputs=lambda line, kb, request, **_: _no_documents(kb, line, request))
    def documents_table(self, kb: Optional[str], request: gr.Request = None) -> Any:
        return self.table.render(kb, request)  # the session's page of it (ui/knowledge_bases/documents_table.py)

    def file_choices(self, kb: Optional[str], request: gr.Request = None) -> Any:
        """No document is picked for the user: deleting must be a choice, not the default."""
        return gr.update(choices=document_files(self.service, kb, actor(request)), value=None)

    def ask_delete_document(self, kb: Optional[str], file: DocFilter, request: gr.Request = None) -> tuple:
        """Outputs: confirmation row, confirmation text, pending {"kb", "file"}, status. Nothing chosen: the
        status says so (the confirmation row stays hidden, and a message inside it was never seen)."""
        lang = lang_of(request)
        if not kb or not (file := selected_file(file)):  # the picker is a multiselect of one
            return hidden(), "", None, warning_md(choose_document_first(lang))
        return (
            gr.update(visible=True),
            warning_md(
                text(
                    lang,
                    "Delete **{file}** from **{kb}**? It stays in the trash for {days:g} days.",
                    "从 **{kb}** 删除 **{file}**？它会在回收站中保留 {days:g} 天。",
                ).format(file=md_literal(file), kb=md_literal(kb), days=self.retention_days)
            ),
            {"kb": kb, "file": file},
            gr.skip(),
        )

    @shows_errors(
        "delete the document", outputs=lambda line, **_: (warning_md(line), hidden(), gr.skip(), gr.skip(), None)
    )
    def delete_document(self, pending: Optional[dict[str, str]], request: gr.Request = None) -> tuple:
        """Outputs: status, confirmation row, documents table, file picker, pending."""
        lang = lang_of(request)
        if not pending:
            return warning_md(choose_document_first(lang)), hidden(), gr.skip(), gr.skip(), None
        kb = pending["kb"]
        doc = self.service.delete_document(kb, pending["file"], who=actor(request))
        return (
            f"{icon('deleted')} {text(lang, 'Deleted', '已删除')} **{md_literal(doc.file)}** "
            + text(lang, "(restore it from the trash below)", "（可在下方回收站中恢复）"),
            hidden(),
            self.documents_table(kb, request),
            self.file_choices(kb),
            None,
        )

    def close_confirmation(self) -> tuple:
        """A confirmation is about what was selected when it was asked: any new selection closes it."""
        return hidden(), None

    # -- upload ---------------------------------------------------------------------------------

    @shows_errors(
        "add the documents", outputs=lambda line, **_: (warning_md(line), gr.skip(), gr.skip(), gr.skip(), gr.skip())
    )
    def upload(self, kb: Optional[str], files: Any, browser: Optional[str] = None, request: gr.Request = None) -> tuple:
        """Start the upload as a server-side job. Outputs: ingest status, documents table, timer, files,
        browser id (made here only when the browser keeps none: ``restore_js``). Runs with preprocess=False:
        ``files`` are FileData dicts, which carry the user's original names. The chosen files stay in the box
        (and still usable) unless the job was accepted."""
        lang = lang_of(request)
        if not kb:  # the chosen files stay (not discarded) for when a knowledge base is chosen
            return warning_md(choose_kb_first(lang)), gr.skip(), gr.skip(), gr.skip(), gr.skip()
        browser = browser or new_browser_id()
        owner = user_key(request, browser)
        running = self.jobs.get(owner, kb)
        if running is not None and running.running:  # checked before the files are used up
            return warning_md(upload_runs_already(lang)), gr.skip(), gr.skip(), gr.skip(), browser
        try:
            paths, names = self.uploads.admit(files)
        except UploadRefused as exc:
            log.info("KB tab upload refused: %s", exc)
            return warning_md(error_text(exc, "add the documents", lang)), gr.skip(), gr.skip(), None, gr.skip()
        if not paths:
            return (
                warning_md(text(lang, "Add one or more PDF files first.", "请先添加 PDF 文件。")),
                gr.skip(),
                gr.skip(),
                gr.skip(),
                gr.skip(),
            )
        job = self.jobs.start(owner, kb, paths, names, who=actor(request))
        if job is None:  # started meanwhile by the same browser: this request's claim ends here
            self.uploads.discard(paths)
            return warning_md(upload_runs_already(lang)), gr.skip(), gr.skip(), None, browser
        return job_progress_html(job, lang, self.model_preparing), gr.skip(), gr.update(active=True), None, browser

    @staticmethod
    def cancel_picker(job: Optional[UploadJob], only_changes: bool = False) -> tuple[Any, Any]:
        """Its row and its choices: the files of the running upload that can be cancelled one by one (hidden
        without one). A poll sends them only when they changed, so a user choosing is not interrupted."""
        listed = job.cancellable() if job is not None else []
        if only_changes and job is not None and job.listed_cancellable == listed:
            return gr.skip(), gr.skip()
        if job is not None:
            job.listed_cancellable = listed
        return gr.update(visible=bool(listed)), gr.update(choices=listed, value=None)

    def poll(self, kb: Optional[str], browser: Optional[str] = None, request: gr.Request = None) -> tuple:
        """Each timer tick: the job's progress, or its results once it is done. Outputs: ingest status,
        documents table, file picker, timer, the per-file cancel row and picker."""
        lang = lang_of(request)
        if not kb:  # a tick before a reloaded page knows its KB: the attach that follows decides
            return gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
        job = self.jobs.followed(user_key(request, browser), kb)
        if job is None:
            return gr.skip(), gr.skip(), gr.skip(), gr.update(active=False), *self.cancel_picker(None)
        if job.running:
            return (
                job_progress_html(job, lang, self.model_preparing),
                self.documents_table(kb, request),
                gr.skip(),
                gr.skip(),
                *self.cancel_picker(job if self.may_cancel(job, request) else None, only_changes=True),
            )
        job.result_shown = True
        return (
            self.job_result(job, lang),
            self.documents_table(kb, request),
            self.file_choices(kb),
            gr.update(active=False),
            *self.cancel_picker(None),
        )

    def attach(self, kb: Optional[str], browser: Optional[str] = None, request: gr.Request = None) -> tuple:
        """On page load and KB switch: follow this browser's (or login's) running upload into that KB, or
        say that someone else's runs there. Outputs: ingest status, timer, the per-file cancel row and picker."""
        lang = lang_of(request)
        key = user_key(request, browser)
        if not key:  # the KB tab shown on a reload before the page's load read the browser's id:
            return gr.skip(), gr.skip(), gr.skip(), gr.skip()  # its own upload is no other browser's
        job = self.jobs.followed(key, kb)
        if job is None or not job.running:
            return (
                (another_upload_runs(lang) if self.jobs.running_in(kb) else ""),
                gr.update(active=False),
                *self.cancel_picker(None),
            )
        cancellable = job if self.may_cancel(job, request) else None
        return (
            job_progress_html(job, lang, self.model_preparing),
            gr.update(active=True),
            *self.cancel_picker(cancellable),
        )

    def may_cancel(self, job: UploadJob, request: Optional[gr.Request]) -> bool:
        """Its own browser (or login) cancels an upload; one resumed at start, whoever may add documents."""
        if job.user != RESUMED:
            return True  # followed by its own page only
        return self.service.role(job.kb, actor(request)) in ("editor", "owner")

    @staticmethod
    def job_result(job: UploadJob, lang: str) -> str:
        if job.error is not None:
            return warning_md(error_text(job.error, "add the documents", lang))
        return results_markdown(job.results or [], lang)

    def cancel_upload(self, kb: Optional[str], browser: Optional[str] = None, request: gr.Request = None) -> tuple:
        """Outputs: ingest status, timer. The poll goes on after a cancel, so the job's final result replaces
        the status even if a tick meanwhile stopped it. Only the browser (or login) that started an upload
        can cancel it; one resumed at start, whoever may add documents there (``may_cancel``)."""
        lang = lang_of(request)
        job = self.jobs.followed(user_key(request, browser), kb)
        if job is not None and job.running and self.may_cancel(job, request):
            job.cancel.set()
            return job_progress_html(job, lang, self.model_preparing), gr.update(active=True)
        if self.jobs.running_in(kb):
            return another_upload_runs(lang), gr.skip()
        return text(lang, "No upload is running.", "没有正在进行的上传。"), gr.skip()

    def cancel_file(
        self, kb: Optional[str], place: Optional[int], browser: Optional[str] = None, request: gr.Request = None
    ) -> tuple:
        """Cancel the picked file of this browser's running upload; the others go on. Outputs: ingest
        status, the per-file cancel row and picker."""
        lang = lang_of(request)
        job = self.jobs.followed(user_key(request, browser), kb)
        if job is None or not job.running or not self.may_cancel(job, request):
            return text(lang, "No upload is running.", "没有正在进行的上传。"), *self.cancel_picker(None)
        if place is None or not job.cancel_file(int(place)):
            choose = text(lang, "Choose a file of the running upload first.", "请先选择正在上传的文件。")
            return warning_md(choose), *self.cancel_picker(job)
        name = job.files[int(place)].name
        line = text(lang, "Cancelling {file}; the other files go on.", "正在取消 {file}；其他文件继续。")
        return f"{icon('stop')} " + line.format(file=md_literal(name)), *self.cancel_picker(job)

    # -- quality checks -------------------------------------------------------------------------

    @shows_errors("run the self-test")
    def selftest(
        self, kb: Optional[str], samples: float, request: gr.Request = None, progress: gr.Progress = gr.Progress()
    ) -> str:
        lang = lang_of(request)
        if not kb:
            return warning_md(choose_kb_first(lang))

        def on_progress(event: ProgressEvent) -> None:
            progress(
                event.fraction,
                desc=text(lang, "self-test question {i} of {n}", "自测问题 {i}/{n}").format(
                    i=event.current, n=event.total
                ),
            )

        from backend.quality.selftest import selftest

        report = selftest(self.service, kb, samples=int(samples or 50), progress=on_progress, who=actor(request))
        return dict_markdown(report, lang)

    @shows_errors("run the evaluation")
    def evaluate(
        self,
        kb: Optional[str],
        qa_path: str,
        docs_dir: str,
        use_current_kb: bool,
        modes: list[str],
        limit: float,
        request: gr.Request = None,
        progress: gr.Progress = gr.Progress(),
    ) -> str:
        qa, docs = eval_inputs(self.service.settings.ui.eval_dir, qa_path, docs_dir)

        def on_progress(event: ProgressEvent) -> None:
            progress(event.fraction if event.file_count else 0.0, desc=event.message or event.stage)

        from backend.quality.evaluation import format_report, run_eval

        report = run_eval(
            self.service,
            qa,
            docs,
            kb_name=kb if use_current_kb else None,
            modes=modes or EVAL_MODES,
            limit=int(limit or 0),
            progress=on_progress,
            who=actor(request),
        )
        return f"```text\n{format_report(report)}\n```"


def _no_documents(kb: Optional[str], line: str, request: Optional[gr.Request]) -> Any:
    log.warning("documents of %r: %s", kb, line)
    return gr.update(value=[], headers=doc_headers(lang_of(request)))
