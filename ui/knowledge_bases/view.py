"""What the Knowledge base tab shows: progress lines, upload results, the documents table, reports."""

from __future__ import annotations

import html
from typing import Any, Optional, Sequence

from backend.types import DocumentInfo, IngestResult, ProgressEvent, Rate, duration_text, per_second_text
from ui.i18n.messages import translate_result
from ui.i18n.strings import text
from ui.icons import icon
from ui.knowledge_bases.upload_jobs import RESUMED, FileState, UploadJob


def doc_headers(lang: str) -> list[str]:
    return [
        text(lang, "file", "文件"),
        text(lang, "pages", "页数"),
        text(lang, "chunks", "分块"),
        text(lang, "figures", "图表"),
        text(lang, "size", "大小"),
        text(lang, "added", "添加于"),
        text(lang, "status", "状态"),
    ]


def stage_label(lang: str, stage: str) -> str:
    labels = {
        "file": text(lang, "starting", "开始"),
        "parse": text(lang, "parse page", "解析页"),
        "ocr": text(lang, "OCR page", "OCR 识别页"),
        "embed": text(lang, "embedding", "向量化"),
        "store": text(lang, "storing", "写入"),
        "done": text(lang, "done", "完成"),
    }
    return labels.get(stage, stage)


def progress_text(event: ProgressEvent, lang: str = "en") -> str:
    """e.g. "file 1 of 2 · a.pdf · OCR page 3 of 10"."""
    head = text(lang, "file {i} of {n}", "第 {i} 个文件，共 {n} 个").format(i=event.file_index, n=event.file_count)
    head += f" · {event.file}" if event.file else ""
    stage = stage_label(lang, event.stage)
    if event.total and event.stage in ("parse", "ocr"):
        return (
            head
            + " · "
            + text(lang, "{stage} {current} of {total}", "{stage} {current}/{total}").format(
                stage=stage, current=event.current, total=event.total
            )
        )
    if event.total and event.stage in ("embed", "store"):
        return f"{head} · {stage} {event.current}/{event.total}"
    known = event.stage in ("file", "parse", "ocr", "embed", "store", "done")
    return f"{head} · {stage if known else event.message or stage}"


def pace_text(rate: Rate, lang: str) -> str:
    """e.g. "0.35 pages/s · about 19 min left", "每秒 0.35 页 · 约剩 19 分钟"."""
    amount, unit = duration_text(rate.seconds_left)
    if lang == "zh":
        zh_unit = {"s": "秒", "min": "分钟", "h": "小时"}[unit]
        what = "页" if rate.unit == "pages" else "块"
        return f"每秒 {per_second_text(rate)} {what} · 约剩 {amount} {zh_unit}"
    return f"{per_second_text(rate)} {rate.unit}/s · about {amount} {unit} left"


def progress_html(fraction: Optional[float], line: str) -> str:
    """A progress bar of our own (the job outlives any one Gradio event, so Gradio's bar cannot show it);
    ``fraction`` None: work whose length is unknown (a moving stripe, no percentage)."""
    if fraction is None:
        return (
            f'<div class="dl-progress dl-indeterminate" role="progressbar"><div class="dl-progress-bar">'
            f'<span></span></div><div class="dl-progress-text">{html.escape(line)}</div></div>'
        )
    width = max(0.0, min(100.0, fraction * 100))
    return (
        f'<div class="dl-progress" role="progressbar" aria-valuenow="{width:.0f}" aria-valuemin="0" '
        f'aria-valuemax="100"><div class="dl-progress-bar"><span style="width:{width:.1f}%"></span></div>'
        f'<div class="dl-progress-text">{html.escape(line)} · {width:.0f}%</div></div>'
    )


def job_progress_html(job: UploadJob, lang: str, model_preparing: bool = False) -> str:
    """The job's bar; while the embedding model is prepared it says the upload waits for it (pages are
    read meanwhile, embedding starts when the model is ready)."""
    first = job.names[0] if job.names else ""
    if job.event is None and model_preparing:
        line = text(
            lang,
            "queued: {file} (indexing starts when the embedding model is ready)",
            "排队中：{file}（向量模型准备好后开始索引）",
        ).format(file=first)
    elif job.event is None:
        line = text(
            lang,
            "queued: {file} (waits for the embedding model or another upload)",
            "排队中：{file}（等待向量模型或其他上传）",
        ).format(file=first)
    else:
        line = progress_text(job.event, lang)
        line += f" · {pace_text(job.rate, lang)}" if job.rate is not None else ""
    if job.user == RESUMED:  # nobody on this page started it: say where it comes from
        line = text(lang, "Resuming an upload a restart cut short: ", "继续重启前中断的上传：") + line
    if job.cancel.is_set():
        line = text(lang, "Cancelling after the current page…", "将在当前页后取消…") + " " + line
    cancelled = [job.files[place].name for place in sorted(job.cancelled_files) if place < len(job.files)]
    if cancelled:
        line += " · " + text(lang, "cancelled alone: {files}", "已单独取消：{files}").format(files=", ".join(cancelled))
    return progress_html(job.fraction, line)


RESULT_ICONS = {"indexed": "ok", "duplicate": "same", "replaced": "replace", "failed": "fail", "cancelled": "stop"}


def result_status(lang: str, status: str) -> str:
    names = {
        "indexed": text(lang, "indexed", "已索引"),
        "duplicate": text(lang, "duplicate", "重复"),
        "replaced": text(lang, "replaced", "已替换"),
        "failed": text(lang, "failed", "失败"),
        "cancelled": text(lang, "cancelled", "已取消"),
    }
    return names.get(status, status)


def results_markdown(results: Sequence[IngestResult], lang: str = "en") -> str:
    if not results:
        return f"{icon('warn')} " + text(lang, "No PDF was processed.", "没有处理任何 PDF。")
    lines = [cancel_summary(results, lang)] if any(r.status == "cancelled" for r in results) else []
    headers = [
        text(lang, "file", "文件"),
        text(lang, "result", "结果"),
        text(lang, "pages", "页数"),
        text(lang, "chunks", "分块"),
        text(lang, "figures", "图表"),
        text(lang, "details", "说明"),
    ]
    lines += ["| " + " | ".join(headers) + " |", "|---|---|---|---|---|---|"]
    for r in results:
        detail = (
            translate_result(r.error, lang)
            if r.error
            else (
                text(lang, "{n} OCR pages, {s:.1f} s", "OCR {n} 页，{s:.1f} 秒").format(n=r.ocr_pages, s=r.seconds)
                if r.ok
                else ""
            )
        )
        lines.append(
            f"| {cell(r.file)} | {icon(RESULT_ICONS.get(r.status, 'info'))} {result_status(lang, r.status)}"
            f" | {r.pages} | {r.chunks} | {r.figures} | {cell(detail)} |"
        )
    return "\n".join(lines)


def cancel_summary(results: Sequence[IngestResult], lang: str) -> str:
    kept = sum(1 for r in results if r.ok)
    if not kept:
        return f"{icon('stop')} " + text(lang, "Upload cancelled; nothing was stored.", "上传已取消；未存储任何内容。")
    return f"{icon('stop')} " + text(
        lang,
        "Upload cancelled; the {n} file(s) finished before the cancel were kept.",
        "上传已取消；取消前完成的 {n} 个文件已保留。",
    ).format(n=kept)


def cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def dict_markdown(report: dict[str, Any], lang: str = "en") -> str:
    rows = "\n".join(f"| {cell(key)} | {cell(value)} |" for key, value in report.items())
    return f"| {text(lang, 'metric', '指标')} | {text(lang, 'value', '值')} |\n|---|---|\n{rows}"


def document_status(doc: DocumentInfo, lang: str, running: Optional[FileState]) -> str:
    """ "complete" reads as such; a pending row says it is being indexed, with the job's progress if known
    (a parsed file may wait for the next ones, to be embedded with them)."""
    if doc.status == "pending":
        line = text(lang, "being indexed", "正在索引")
        event = running.event if running is not None else None
        if event is not None and event.stage == "embed" and not event.current:
            line += " · " + text(lang, "waiting to be embedded", "等待向量化")
        elif event is not None and event.total:
            line += f" · {stage_label(lang, event.stage)} {event.current}/{event.total}"
        return line
    names = {"complete": text(lang, "indexed", "已索引"), "failed": text(lang, "failed", "失败")}
    return names.get(doc.status, doc.status)


def another_upload_runs(lang: str) -> str:
    return text(
        lang,
        "An upload started in another browser is running in this knowledge base; only that browser can cancel it.",
        "另一个浏览器开始的上传正在此知识库中进行；只有该浏览器可以取消它。",
    )


def upload_runs_already(lang: str) -> str:
    return text(
        lang,
        "An upload into this knowledge base is already running; wait for it or cancel it.",
        "此知识库已有上传在进行；请等待或取消。",
    )


def choose_kb_first(lang: str) -> str:
    return text(lang, "Choose or create a knowledge base first.", "请先选择或创建知识库。")


def choose_document_first(lang: str) -> str:
    return text(lang, "Choose a document first.", "请先选择文档。")
