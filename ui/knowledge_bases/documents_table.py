"""The Knowledge base tab's documents table: one page of the list at a time, filtered by name and sorted
on the server (``DocLens.documents_page``), so a library of 10,000 documents sends the page 20 rows, and
the original PDF of a row offered for download.

Each browser session's view (filter, sort, page) is kept here, on the server: every event that redraws the
table (an upload's tick, a delete, a KB switch) shows the user's page, not the first one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Any, Optional

import gradio as gr

from backend.service import DocLens
from backend.types import DOCUMENT_SORTS, DocumentInfo, DocumentPage
from ui.common import UNDOCUMENTED, ChangeSteps, actor, hide_if_shown, shows_errors, warning_md
from ui.i18n.strings import label, lang_of, text
from ui.knowledge_bases.upload_jobs import UploadJobs
from ui.knowledge_bases.view import doc_headers, document_status
from ui.web_files import ShownFiles, shown_files

log = logging.getLogger(__name__)

PAGE_ROWS = 20
MAX_VIEWS = 2000  # browser sessions whose view is remembered (the oldest is forgotten first)
DATATYPES = ["str", "number", "number", "number", "str", "str", "str"]
# A long file name set as one line pushed the status (an upload's "being indexed · embedding 40/96") out of
# sight: the name wraps within its share, and the other columns are as wide as their cells.
COLUMN_WIDTHS = ["40%"]


@dataclass
class View:
    kb: Optional[str] = None
    asked: DocumentPage = field(default_factory=lambda: DocumentPage(limit=PAGE_ROWS))
    shown: Optional[DocumentPage] = None  # the page last drawn: a clicked row is one of these


def sort_label(key: str) -> Any:
    return {
        "file": label("name", "名称"),
        "pages": label("pages", "页数"),
        "chunks": label("chunks", "分块"),
        "size": label("size", "大小"),
        "added": label("date added", "添加日期"),
        "status": label("status", "状态"),
    }[key]


def file_size(size: int) -> str:
    if size <= 0:
        return "–"
    for unit in ("B", "KB", "MB"):
        if size < 1024 or unit == "MB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]
    return ""


def date_added(created_at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(created_at)) if created_at else "–"


def page_label(page: DocumentPage, lang: str) -> str:
    """e.g. "Documents · 21–40 of 10,000"; a filter that matches nothing says so."""
    head = text(lang, "Documents", "文档")
    if not page.total:
        return head + (" · " + text(lang, "no name matches the filter", "没有匹配筛选的名称") if page.contains else "")
    span = text(lang, "{first}–{last} of {total}", "第 {first}–{last} 个，共 {total} 个").format(
        first=page.offset + 1, last=page.offset + len(page.rows), total=f"{page.total:,}"
    )
    return f"{head} · {span}"


class DocumentsTable:
    """The table's handlers; ``render`` is what every other event of the tab calls to redraw it."""

    def __init__(self, service: DocLens, jobs: UploadJobs, shown: Optional[ShownFiles] = None):
        self.service = service
        self.jobs = jobs
        self.shown = shown or shown_files()  # a download reaches the page only through this narrow folder
        self._views: OrderedDict[str, View] = OrderedDict()
        self._lock = threading.Lock()

    def _view(self, request: Optional[gr.Request]) -> View:
        key = getattr(request, "session_hash", None) or ""
        with self._lock:
            if not key:
                return View()  # no session (a direct call): the first page, remembered nowhere
            view = self._views.pop(key, None) or View()
            self._views[key] = view
            while len(self._views) > MAX_VIEWS:
                self._views.popitem(last=False)
            return view

    def render(self, kb: Optional[str], request: Optional[gr.Request] = None) -> Any:
        """The session's page of ``kb`` (another knowledge base than last time: its first page)."""
        lang = lang_of(request)
        view = self._view(request)
        if not kb:
            view.kb, view.shown = None, None
            return gr.update(value=[], headers=doc_headers(lang), label=text(lang, "Documents", "文档"))
        if view.kb != kb:
            view.kb, view.asked = kb, replace(view.asked, offset=0)
        view.shown = page = self.service.documents_page(kb, view.asked, actor(request))
        view.asked = replace(view.asked, offset=page.offset)
        running = self.jobs.running_in(kb)
        rows = [self._row(doc, lang, running) for doc in page.rows]
        return gr.update(value=rows, headers=doc_headers(lang), label=page_label(page, lang))

    @staticmethod
    def _row(doc: DocumentInfo, lang: str, running: list) -> list[Any]:
        state = next(filter(None, (job.file_progress(doc.file) for job in running)), None)  # one lookup per job
        # a file of a running batch shows its pages and chunks as soon as they are known (issue 26 item 5)
        pages, chunks = (state.pages or doc.pages, state.chunks or doc.chunks) if state else (doc.pages, doc.chunks)
        status = document_status(doc, lang, state)
        return [doc.file, pages, chunks, doc.figures, file_size(doc.bytes), date_added(doc.created_at), status]

    @shows_errors("list documents", outputs=lambda line, **_: (gr.skip(), warning_md(line)))
    def show(
        self,
        kb: Optional[str],
        contains: str,
        sort: str,
        descending: bool,
        step: int = 0,
        request: gr.Request = None,
    ) -> tuple[Any, Any]:
        """The filter, the sort or a page step changed. Outputs: table, status line."""
        view = self._view(request)
        sort = sort if sort in DOCUMENT_SORTS else "file"
        same = (contains or "", sort, bool(descending)) == (view.asked.contains, view.asked.sort, view.asked.descending)
        offset = view.asked.offset + step * view.asked.limit if same and view.kb == kb else 0
        view.asked = replace(view.asked, contains=contains or "", sort=sort, descending=bool(descending), offset=offset)
        view.kb = kb
        return self.render(kb, request), ""

    def previous(self, kb: Optional[str], contains: str, sort: str, descending: bool, request: gr.Request = None):
        return self.show(kb, contains, sort, descending, -1, request)

    def next(self, kb: Optional[str], contains: str, sort: str, descending: bool, request: gr.Request = None):
        return self.show(kb, contains, sort, descending, 1, request)

    def picked(self, evt: gr.SelectData, request: gr.Request = None) -> tuple[Any, Any, bool]:
        """A row was clicked: its original offered for download (only a PDF this KB stored, found from the
        page drawn on the server, never from what the page sends), and it becomes the document to delete.
        Outputs: download button, document picker, whether the button is shown."""
        lang = lang_of(request)
        shown = self._view(request).shown
        row = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
        if shown is None or not isinstance(row, int) or not 0 <= row < len(shown.rows):
            return gr.update(visible=False), gr.skip(), False
        doc = shown.rows[row]
        original = shown.originals.get(doc.doc_id)
        offered = self.shown.offer(original, doc.file) if original else None
        if offered is None:
            missing = text(lang, "{file}: no original kept", "{file}：未保存原文件").format(file=doc.file)
            return gr.update(value=None, label=missing, visible=True, interactive=False), doc.file, True
        download = text(lang, "Download {file}", "下载 {file}").format(file=doc.file)
        return gr.update(value=offered, label=download, visible=True, interactive=True), doc.file, True


@dataclass
class TableParts:
    table: gr.Dataframe
    download: gr.DownloadButton
    offered: gr.State  # whether the download button is shown


def build_documents_table(
    table: DocumentsTable, kb_active: gr.Dropdown, status: gr.Markdown, kb_changed: ChangeSteps
) -> TableParts:
    """Filter and sort above the table, paging and the download below it; their events. ``kb_changed``:
    what the active KB's change does."""
    with gr.Row(elem_classes="dl-kb-row"):
        contains = gr.Textbox(
            label=label("Filter by name", "按名称筛选"),
            placeholder=label("part of a file name", "文件名的一部分"),
            elem_id="docs-filter",
            scale=3,
            min_width=200,
        )
        sort = gr.Dropdown(
            [(sort_label(key), key) for key in DOCUMENT_SORTS],
            value="file",
            label=label("Sort by", "排序"),
            elem_id="docs-sort",
            scale=1,
            min_width=140,
        )
        descending = gr.Checkbox(label=label("Descending", "降序"), value=False, elem_id="docs-descending", scale=0)
    docs_table = gr.Dataframe(
        headers=doc_headers("en"),
        value=[],
        datatype=DATATYPES,
        interactive=False,
        elem_id="docs-table",
        label=label("Documents", "文档"),
        wrap=True,
        column_widths=COLUMN_WIDTHS,
        max_height=420,
    )
    with gr.Row(elem_classes="dl-kb-row"):
        previous = gr.Button(label("‹ Previous", "‹ 上一页"), elem_id="docs-previous", scale=0, min_width=110)
        following = gr.Button(label("Next ›", "下一页 ›"), elem_id="docs-next", scale=0, min_width=110)
        download = gr.DownloadButton(visible=False, elem_id="doc-download", scale=1, min_width=200)
    inputs = [kb_active, contains, sort, descending]
    for trigger, handler, name in (
        (contains.input, table.show, "docs_filter"),
        (sort.input, table.show, "docs_sort"),
        (descending.input, table.show, "docs_descending"),
        (previous.click, table.previous, "docs_previous"),
        (following.click, table.next, "docs_next"),
    ):
        trigger(
            handler,
            inputs,
            [docs_table, status],
            api_name=name,
            trigger_mode="always_last",
            show_progress="hidden",
            **UNDOCUMENTED,
        )
    return TableParts(docs_table, download, hidden_on_kb_change(kb_changed, download))


def hidden_on_kb_change(kb_changed: ChangeSteps, download: gr.DownloadButton) -> gr.State:
    """Another KB's table offers nothing: the download is hidden (if shown). Returns its "offered" flag."""
    offered = gr.State(False)
    kb_changed.add(lambda shown, request: (hide_if_shown(shown), False), [offered], [download, offered])
    return offered


def offer_on_select(parts: TableParts, table: DocumentsTable, doc_pick: gr.Dropdown) -> None:
    outputs = [parts.download, doc_pick, parts.offered]
    parts.table.select(table.picked, None, outputs, api_name="docs_pick", **UNDOCUMENTED)
