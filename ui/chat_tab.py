"""The Chat tab: pick a knowledge base, ask, read the answer with its sources, pages and figures."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Iterator, Optional

import gradio as gr

from backend.service import DocLens
from backend.types import Answer, Figure, Source
from ui import panels
from ui.common import (ALL_DOCUMENTS, bi, doc_filter_dropdown, document_files, error_text, kb_dropdown,
                       selected_file, warning_md)
from ui.latex import LATEX_DELIMITERS, protect_currency

log = logging.getLogger("doclens.ui")

SOURCE_HEADERS = ["#", "file · 文件", "page · 页", "relevance · 相关度"]


@dataclass
class ChatTab:
    """The components other tabs and the page load need to refresh."""
    kb_select: gr.Dropdown
    doc_filter: gr.Dropdown
    summary: gr.Markdown
    gallery: gr.Gallery
    figures: gr.State


def message_text(message: dict[str, Any]) -> str:
    """A chat message's text whether it arrives as a string or as Gradio's list of content blocks."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(block.get("text", "") for block in content if isinstance(block, dict))
    if isinstance(content, dict):
        return str(content.get("text", ""))
    return ""


def normalize_messages(messages: Optional[list[Any]]) -> list[dict[str, Any]]:
    """Plain {"role", "content": str[, "metadata"]} dicts, so they can be edited and sent back."""
    normalized = []
    for message in messages or []:
        if not isinstance(message, dict):
            continue
        plain = {"role": message.get("role", "assistant"), "content": message_text(message)}
        if message.get("metadata"):
            plain["metadata"] = message["metadata"]
        normalized.append(plain)
    return normalized


def answer_markdown(answer: Answer) -> str:
    text = protect_currency(answer.answer)
    if answer.notice and answer.notice not in answer.answer:  # extractive answers already open with it
        text += f"\n\n> ℹ️ {protect_currency(answer.notice)}"
    if answer.searched_in:  # the question named its document: say where it was searched
        text += f"\n\n> 🔎 {bi('searched in', '检索范围')}: {protect_currency(answer.searched_in)}"
    return text


def sources_message(sources: list[Source]) -> dict[str, Any]:
    """A collapsible message under the answer listing its sources."""
    return {"role": "assistant", "content": panels.sources_markdown(sources),
            "metadata": {"title": f"📄 {bi('Sources', '来源')} ({len(sources)})", "status": "done"}}


def source_state(sources: list[Source]) -> list[dict[str, Any]]:
    return [{"file": s.file, "page": s.page, "text": s.text} for s in sources]


class ChatHandlers:
    """Event handlers: plain methods over the service, so each is easy to read and to test."""

    def __init__(self, service: DocLens):
        self.service = service

    # -- page and knowledge-base refresh -------------------------------------------------------

    def refresh_choices(self, kb: Optional[str], doc_filter: Optional[str]) -> tuple[Any, Any]:
        kb_update = kb_dropdown(self.service, kb)
        return kb_update, doc_filter_dropdown(self.service, kb_update["value"], doc_filter)

    def refresh_documents(self, kb: Optional[str], doc_filter: Optional[str]) -> Any:
        return doc_filter_dropdown(self.service, kb, doc_filter)

    def panel_file(self, kb: Optional[str], doc_filter: Optional[str]) -> Optional[str]:
        """The document the side panel shows: the filter's, or the only document of the knowledge base."""
        file = selected_file(doc_filter)
        if file or not kb:
            return file
        files = document_files(self.service, kb)
        return files[0] if len(files) == 1 else None

    def figure_gallery(self, kb: Optional[str], doc_filter: Optional[str]) -> tuple[Any, list[dict[str, Any]]]:
        if not kb:
            return gr.update(value=[]), []
        try:
            figures = self.service.figures(kb, selected_file(doc_filter))
        except Exception as exc:
            log.warning("figures of %r: %s", kb, error_text(exc, "list figures"))
            return gr.update(value=[]), []
        return (gr.update(value=[(f.path, self.figure_caption(f)) for f in figures]),
                [{"id": f.id, "page": f.page, "file": f.file} for f in figures])

    @staticmethod
    def figure_caption(figure: Figure) -> str:
        caption = f"{figure.file} p{figure.page}"
        return f"{caption}: {figure.caption[:60]}" if figure.caption else caption

    def summary(self, kb: Optional[str], doc_filter: Optional[str]) -> str:
        file = self.panel_file(kb, doc_filter)
        if not file:
            return f"*{bi('Choose a document to see its summary.', '选择一个文档以查看摘要。')}*"
        try:
            return f"**{file}**\n\n" + protect_currency(self.service.summary(kb, file))
        except Exception as exc:
            return warning_md(error_text(exc, "summarise the document"))

    # -- asking ---------------------------------------------------------------------------------

    def send(self, question: str, kb: Optional[str], doc_filter: Optional[str], messages: list[Any],
             turns: list[dict[str, str]], lock: Optional[dict[str, Any]]) -> Iterator[tuple]:
        """Stream one answer. Outputs: chatbot, question, sources, confidence, chart, lock row, lock
        state, turns, last sources."""
        question = (question or "").strip()
        skip = gr.skip()
        if not question:
            yield (skip,) * 9
            return
        messages = normalize_messages(messages) + [{"role": "user", "content": question}]
        if not kb:
            messages.append({"role": "assistant", "content": warning_md(bi(
                "Choose or create a knowledge base first (Knowledge base tab).",
                "请先选择或创建知识库（知识库标签页）。"))})
            yield messages, "", skip, skip, skip, skip, skip, skip, skip
            return
        messages.append({"role": "assistant", "content": ""})
        yield messages, "", skip, skip, skip, skip, skip, skip, skip
        answer: Optional[Answer] = None
        text = ""
        try:
            for update in self.service.ask_stream(kb, question, history=list(turns or []),
                                                  doc=selected_file(doc_filter),
                                                  figure_id=(lock or {}).get("id")):
                if isinstance(update, Answer):
                    answer = update
                    continue
                text += update
                messages[-1]["content"] = protect_currency(text)
                yield messages, skip, skip, skip, skip, skip, skip, skip, skip
        except Exception as exc:
            messages[-1]["content"] = warning_md(error_text(exc, "answer the question"))
            yield messages, skip, skip, skip, skip, gr.update(visible=False), None, skip, skip
            return
        if answer is None:  # the contract says this cannot happen; never leave an empty bubble
            messages[-1]["content"] = protect_currency(text) or warning_md("no answer was produced")
            yield messages, skip, skip, skip, skip, gr.update(visible=False), None, skip, skip
            return
        yield self._final(messages, answer, question, turns)

    def _final(self, messages: list[dict[str, Any]], answer: Answer, question: str,
               turns: list[dict[str, str]]) -> tuple:
        messages[-1]["content"] = answer_markdown(answer)
        if answer.sources:
            messages.append(sources_message(answer.sources))
        turns = [*(turns or []), {"role": "user", "content": question},
                 {"role": "assistant", "content": answer.answer}]
        warn_below = self.service.settings.confidence.warn_below
        return (messages, gr.skip(), gr.Dataset(samples=panels.source_rows(answer.sources)),
                panels.confidence_html(answer, warn_below), panels.score_chart_html(answer.sources),
                gr.update(visible=False), None, turns, source_state(answer.sources))

    def clear(self) -> tuple:
        """Outputs: chatbot, sources, confidence, chart, page preview, turns, last sources."""
        return ([], gr.Dataset(samples=[]), panels.confidence_html(None, 0), "",
                gr.update(value=None, visible=False), [], [])

    # -- sources and figures -------------------------------------------------------------------

    def show_page(self, index: Optional[int], kb: Optional[str], sources: list[dict[str, Any]]) -> Any:
        if index is None or not kb or not sources or not 0 <= int(index) < len(sources):
            return gr.skip()
        source = sources[int(index)]
        try:
            path = self.service.page_image(kb, source["file"], int(source["page"]), highlight=source["text"])
        except Exception as exc:
            gr.Warning(error_text(exc, "show the page"))
            return gr.skip()
        return gr.update(value=str(path), label=f"{source['file']} · p{source['page']}", visible=True)

    def lock_figure(self, figures: list[dict[str, Any]], evt: gr.SelectData) -> tuple:
        """Outputs: lock row, chip text, lock state."""
        index = evt.index if isinstance(evt.index, int) else (evt.index or [None])[0]
        if index is None or not 0 <= index < len(figures or []):
            return gr.skip(), gr.skip(), gr.skip()
        figure = figures[index]
        return gr.update(visible=True), panels.figure_chip_text(figure["page"]), figure

    def unlock_figure(self) -> tuple:
        return gr.update(visible=False), None


def build_chat_tab(service: DocLens) -> ChatTab:
    handlers = ChatHandlers(service)
    turns = gr.State([])
    last_sources = gr.State([])
    figures = gr.State([])
    figure_lock = gr.State(None)
    with gr.Row(elem_classes="dl-chat-layout", equal_height=False):
        with gr.Column(scale=3, min_width=360, elem_classes="dl-main"):
            with gr.Row(elem_classes="dl-pickers"):
                kb_select = gr.Dropdown(label=bi("Knowledge base", "知识库"), choices=[], value=None,
                                        allow_custom_value=True, elem_id="kb-select", scale=1, min_width=160)
                doc_filter = gr.Dropdown(label=bi("Document", "文档"), choices=[ALL_DOCUMENTS],
                                         value=ALL_DOCUMENTS, allow_custom_value=True, elem_id="doc-filter",
                                         scale=1, min_width=160)
            chatbot = gr.Chatbot(label=bi("Conversation", "对话"), elem_id="chatbot", height=380,
                                 latex_delimiters=LATEX_DELIMITERS, buttons=["copy"], feedback_options=None,
                                 placeholder=bi("Ask a question about your documents.", "就文档提出问题。"))
            with gr.Row(visible=False, elem_id="figure-lock", elem_classes="dl-chip") as lock_row:
                lock_text = gr.Markdown("", elem_classes="dl-chip-text")
                unlock = gr.Button("✕", elem_id="figure-unlock", size="sm", variant="secondary", min_width=40,
                                   scale=0)
            with gr.Row(elem_classes="dl-ask"):
                question = gr.Textbox(show_label=False, placeholder=bi("Your question", "你的问题"), lines=1,
                                      max_lines=6, elem_id="question", scale=5, min_width=200, submit_btn=False)
                send = gr.Button(bi("Send", "发送"), variant="primary", elem_id="send", scale=0, min_width=120)
                clear = gr.Button(bi("Clear", "清空"), elem_id="clear", scale=0, min_width=120)
            sources = gr.Dataset(label=bi("Sources of the last answer: click one to see its page",
                                          "最近回答的来源：点击查看页面"),
                                 components=["textbox", "textbox", "textbox", "textbox"], headers=SOURCE_HEADERS,
                                 samples=[], type="index", layout="table", samples_per_page=10, elem_id="sources")
            page_preview = gr.Image(label=bi("Page", "页面"), type="filepath", interactive=False, visible=False,
                                    elem_id="page-preview", buttons=["fullscreen"], height=560)
        with gr.Column(scale=2, min_width=300, elem_classes="dl-side"):
            confidence = gr.HTML(panels.confidence_html(None, 0), elem_id="confidence")
            chart = gr.HTML("", elem_id="score-chart")
            with gr.Accordion(bi("Summary", "摘要"), open=True, elem_classes="dl-summary-box"):
                summary = gr.Markdown("", elem_id="summary", latex_delimiters=LATEX_DELIMITERS)
            gallery = gr.Gallery(label=bi("Figures: click one to ask about it", "图表：点击后提问"),
                                 elem_id="figure-gallery", columns=3, height=220, allow_preview=False,
                                 object_fit="contain", interactive=False, fit_columns=False)

    ask_inputs = [question, kb_select, doc_filter, chatbot, turns, figure_lock]
    ask_outputs = [chatbot, question, sources, confidence, chart, lock_row, figure_lock, turns, last_sources]
    for trigger, api_name in ((send.click, "chat_send"), (question.submit, "chat_submit")):
        trigger(handlers.send, ask_inputs, ask_outputs, api_name=api_name, api_visibility="undocumented",
                show_progress="minimal")
    clear.click(handlers.clear, None, [chatbot, sources, confidence, chart, page_preview, turns, last_sources],
                api_name="chat_clear", api_visibility="undocumented", queue=False)
    sources.click(handlers.show_page, [sources, kb_select, last_sources], page_preview, api_name="show_page",
                  api_visibility="undocumented")
    gallery.select(handlers.lock_figure, figures, [lock_row, lock_text, figure_lock], api_name="lock_figure",
                   api_visibility="undocumented")
    unlock.click(handlers.unlock_figure, None, [lock_row, figure_lock], api_name="unlock_figure",
                 api_visibility="undocumented", queue=False)

    tab = ChatTab(kb_select, doc_filter, summary, gallery, figures)
    picked_kb = kb_select.input(handlers.refresh_documents, [kb_select, doc_filter], doc_filter,
                                api_name="chat_pick_kb", api_visibility="undocumented")
    chain_panel(picked_kb, handlers, tab, "chat_kb")
    # A no-op first step so the document pick and the KB pick share the same panel chain.
    picked_doc = doc_filter.input(lambda: None, None, None, api_name="chat_pick_doc", api_visibility="undocumented",
                                  queue=False)
    chain_panel(picked_doc, handlers, tab, "chat_doc")
    return tab


def chain_panel(event: Any, handlers: ChatHandlers, tab: ChatTab, name: str) -> Any:
    """After ``event``: reload the gallery, then the (possibly slow, model-written) summary."""
    return event.then(handlers.figure_gallery, [tab.kb_select, tab.doc_filter], [tab.gallery, tab.figures],
                      api_name=f"{name}_figures", api_visibility="undocumented").then(
        handlers.summary, [tab.kb_select, tab.doc_filter], tab.summary, api_name=f"{name}_summary",
        api_visibility="undocumented")
