"""A conversation exported as Markdown: each question, its answer with its confidence, and its citations
(file, page, passage); searches without a model too. Built from what the Chat tab keeps of a conversation
(its turns and every answer's sources), offered as a file through the served folder (ui/web_files.py).
"""

from __future__ import annotations

import logging
import time
from typing import Any, Optional

import gradio as gr

from ui.common import UNDOCUMENTED, hide_if_shown
from ui.i18n.strings import label, lang_of, text
from ui.latex import formula_images_shown
from ui.web_files import ShownFiles, shown_files

log = logging.getLogger(__name__)

EXPORT_NAME = "doclens-conversation.md"
MAX_EXPORT_CHARS = 2_000_000  # a conversation longer than this is cut, saying so


def quoted(passage: str, lang: str = "en") -> str:
    """A passage as a Markdown quote; a formula kept as an image says so in ``lang``, not in the parser's mark."""
    lines = formula_images_shown(passage, lang).strip().splitlines()
    return "\n".join(f"> {line}" if line.strip() else ">" for line in lines)


def citations(sources: list[dict[str, Any]], lang: str) -> list[str]:
    lines = [f"### {text(lang, 'Citations', '引用')}", ""]
    for number, source in enumerate(sources, 1):
        relevance = text(lang, "relevance {r:.0f}%", "相关度 {r:.0f}%").format(r=float(source.get("relevance", 0)))
        lines += [f"[{number}] {source.get('file', '')}, p{source.get('page', '')} ({relevance})", ""]
        lines += [quoted(str(source.get("text", "")), lang), ""]
    return lines


def confidence_line(sources: list[dict[str, Any]], lang: str) -> str:
    value = sources[0].get("confidence") if sources else None
    shown = f"{float(value):.0f}%" if value is not None else "–"
    return text(lang, "Confidence: {c}", "置信度：{c}").format(c=shown)


def conversation_markdown(
    kb: Optional[str], turns: list[dict[str, str]], answer_sources: list[list[dict[str, Any]]], lang: str
) -> str:
    """Answers and searches in the order they were made: each entry of ``answer_sources`` is one of them
    (a search's sources carry its question), the answers' texts come from ``turns`` in order."""
    answers = iter([t["content"] for t in turns if t.get("role") == "assistant"])
    questions = iter([t["content"] for t in turns if t.get("role") == "user"])
    stamp = time.strftime("%Y-%m-%d %H:%M")
    lines = [f"# {text(lang, 'DocLens conversation', 'DocLens 对话')}", "", f"{kb or ''} · {stamp}", ""]
    for number, sources in enumerate(answer_sources, 1):
        searched = sources[0].get("search") if sources else None
        question = searched or next(questions, "")
        lines += [f"## {number}. {question}", ""]
        if searched:
            lines += [f"_{text(lang, 'Search without a model', '检索（未使用模型）')}_", ""]
        else:
            lines += [next(answers, ""), ""]
        lines += [f"**{confidence_line(sources, lang)}**", ""]
        lines += citations(sources, lang) if sources else []
    markdown = "\n".join(lines).rstrip() + "\n"
    if len(markdown) > MAX_EXPORT_CHARS:
        cut = text(lang, "(cut: the conversation is longer than {n} characters)", "（已截断：对话超过 {n} 个字符）")
        markdown = markdown[:MAX_EXPORT_CHARS] + "\n\n" + cut.format(n=f"{MAX_EXPORT_CHARS:,}") + "\n"
    return markdown


class ConversationExport:
    def __init__(self, shown: Optional[ShownFiles] = None):
        self.shown = shown or shown_files()

    def export(
        self,
        kb: Optional[str],
        turns: list[dict[str, str]],
        answer_sources: list[list[dict[str, Any]]],
        request: gr.Request = None,
    ) -> Any:
        """Output: the download button, with the file (hidden while there is nothing to export)."""
        lang = lang_of(request)
        if not answer_sources:
            gr.Info(text(lang, "Nothing to export yet: ask a question first.", "还没有可导出的内容：请先提问。"))
            return gr.update(visible=False)
        path = self.shown.offer_text(EXPORT_NAME, conversation_markdown(kb, turns or [], answer_sources, lang))
        return gr.update(
            value=path, visible=True, label=text(lang, "Download {name}", "下载 {name}").format(name=EXPORT_NAME)
        )


def build_export() -> tuple[gr.Button, gr.DownloadButton]:
    with gr.Row(elem_classes="dl-export"):
        button = gr.Button(
            label("Export conversation (Markdown)", "导出对话（Markdown）"), elem_id="chat-export", size="sm", scale=0
        )
        download = gr.DownloadButton(visible=False, elem_id="chat-export-download", size="sm", scale=0)
    return button, download


def wire_export(button: gr.Button, download: gr.DownloadButton, inputs: list, fresh: list) -> None:
    """``inputs``: KB, turns, every answer's sources. ``fresh``: events after which the file is stale."""
    button.click(ConversationExport().export, inputs, download, api_name="chat_export", **UNDOCUMENTED)
    for index, event in enumerate(fresh):
        event(hide_if_shown, download, download, api_name=f"chat_export_hide_{index}", **UNDOCUMENTED)
