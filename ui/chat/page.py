"""The Chat tab's layout and wiring (the handlers are in ui/chat/handlers.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import gradio as gr

from backend.service import DocLens
from ui.browser_storage import CURRENT_KB_KEY, stored_value
from ui.chat import panels
from ui.chat.export import build_export, wire_export
from ui.chat.handlers import ChatHandlers
from ui.chat.search import SearchHandlers, search_button, wire_search
from ui.common import UNDOCUMENTED, ChangeSteps, actor, hide_if_shown, kb_names, wire_picker_matches
from ui.i18n.strings import label
from ui.latex import LATEX_DELIMITERS


@dataclass
class ChatTab:
    """The components other tabs and the page load need to refresh."""

    kb_select: gr.Dropdown
    doc_filter: gr.Dropdown
    summary: gr.Markdown
    gallery: gr.Gallery
    figures: gr.State
    empty_state: gr.Column
    go_to_kb: gr.Button
    refresh: gr.Button
    last_kb: gr.Textbox  # this browser's current knowledge base (ui/browser_storage.py)
    fresh_view: list  # what a fresh conversation view resets
    last_sources: gr.State  # every answer's sources, in order
    side_panel: list  # the last answer's sources table, confidence and score chart


def empty_state_update(service: DocLens, request: gr.Request = None) -> Any:
    """The "nothing here yet" panel shows while there is no knowledge base this login may read."""
    return gr.update(visible=not kb_names(service, actor(request)))


def empty_state_of(service: DocLens) -> Callable[[gr.Request], Any]:
    """``empty_state_update`` as a handler (Gradio passes the request by its annotation)."""

    def update(request: gr.Request) -> Any:
        return empty_state_update(service, request)

    return update


def build_chat_tab(service: DocLens, handlers: ChatHandlers, llm_profile: Optional[gr.State] = None) -> ChatTab:
    turns = gr.State([])
    last_sources = gr.State([])  # every answer's sources, in order (the last answer's are the table's)
    figures = gr.State([])
    figure_lock = gr.State(None)
    last_kb = stored_value(CURRENT_KB_KEY, "current-kb")
    with gr.Column(visible=not kb_names(service), elem_id="chat-empty", elem_classes="dl-empty-state") as empty_state:
        gr.Markdown(
            label(
                "**No knowledge base yet.** Create one in the Knowledge base tab and drop your PDFs "
                "there; then ask your questions here.",
                "**还没有知识库。**请在“知识库”标签页创建一个并拖入 PDF，然后在这里提问。",
            )
        )
        go_to_kb = gr.Button(
            label("Open the Knowledge base tab", "打开知识库标签页"),
            elem_id="chat-empty-go",
            variant="primary",
            size="sm",
        )
    with gr.Row(elem_classes="dl-chat-layout", equal_height=False):
        with gr.Column(scale=3, min_width=360, elem_classes="dl-main"):
            with gr.Row(elem_classes="dl-pickers"):
                kb_select = gr.Dropdown(
                    label=label("Knowledge base", "知识库"),
                    choices=[],
                    value=None,
                    allow_custom_value=True,
                    elem_id="kb-select",
                    scale=1,
                    min_width=160,
                )
                doc_filter = gr.Dropdown(  # several may be picked; none: all documents
                    label=label("Documents (none: all)", "文档（不选即全部）"),
                    choices=[],
                    value=[],
                    multiselect=True,
                    allow_custom_value=True,
                    elem_id="doc-filter",
                    scale=1,
                    min_width=160,
                )
                also_ask = gr.Dropdown(
                    label=label("Also ask", "同时提问"),
                    choices=[],
                    value=[],
                    multiselect=True,
                    elem_id="kb-also",
                    scale=1,
                    min_width=160,
                )
                refresh = gr.Button(label("Refresh", "刷新"), elem_id="chat-refresh", scale=0, min_width=90, size="sm")
            chatbot = gr.Chatbot(
                label=label("Conversation", "对话"),
                elem_id="chatbot",
                height=380,
                latex_delimiters=LATEX_DELIMITERS,
                buttons=["copy"],
                feedback_options=None,
                placeholder=label("Ask a question about your documents.", "就文档提出问题。"),
            )
            lock_row, lock_thumb, lock_text, unlock = build_figure_chip()
            with gr.Row(elem_classes="dl-ask"):
                question = gr.Textbox(
                    show_label=False,
                    placeholder=label("Your question", "你的问题"),
                    lines=1,
                    max_lines=6,
                    elem_id="question",
                    scale=5,
                    min_width=200,
                    submit_btn=False,
                )
                send = gr.Button(label("Send", "发送"), variant="primary", elem_id="send", scale=0, min_width=120)
                search = search_button()  # the passages only, no model (ui/chat/search.py)
                clear = gr.Button(label("Clear", "清空"), elem_id="clear", scale=0, min_width=120)
                stop = gr.Button(
                    label("Stop", "停止"), variant="stop", visible=False, elem_id="stop", scale=0, min_width=120
                )
            export_button, export_download = build_export()  # ui/chat/export.py
            sources = gr.Dataset(
                label=label("Sources of the last answer: click one to see its page", "最近回答的来源：点击查看页面"),
                components=["textbox", "textbox", "textbox", "textbox"],
                headers=panels.source_headers("en"),
                samples=[],
                type="index",
                layout="table",
                samples_per_page=10,
                elem_id="sources",
            )
            page_preview = gr.Image(
                label=label("Page", "页面"),
                type="filepath",
                interactive=False,
                visible=False,
                elem_id="page-preview",
                buttons=["fullscreen"],
                height=560,
            )
        confidence, chart, summary, gallery = build_side_panel()

    ask_inputs = [question, kb_select, doc_filter, chatbot, turns, figure_lock, last_sources]
    ask_inputs += [llm_profile if llm_profile is not None else gr.State(None), also_ask]  # the session's own model
    ask_outputs = [
        chatbot,
        question,
        sources,
        confidence,
        chart,
        lock_row,
        figure_lock,
        turns,
        last_sources,
        page_preview,
    ]
    answering = []
    for trigger, api_name in ((send.click, "chat_send"), (question.submit, "chat_submit")):
        # While an answer streams, Stop stands where Send was (a second question would only queue).
        started = trigger(streaming, None, [send, stop], api_name=f"{api_name}_start", queue=False, **UNDOCUMENTED)
        answer = started.then(
            handlers.send, ask_inputs, ask_outputs, api_name=api_name, show_progress="minimal", **UNDOCUMENTED
        )
        answer.then(idle, None, [send, stop], api_name=f"{api_name}_end", queue=False, **UNDOCUMENTED)
        answering.append(answer)
    search_outputs = [chatbot, question, sources, confidence, chart, last_sources, page_preview]
    wire_search(
        search, SearchHandlers(service), [question, kb_select, doc_filter, chatbot, last_sources], search_outputs
    )
    stop.click(idle, None, [send, stop], cancels=answering, api_name="chat_stop", queue=False, **UNDOCUMENTED)
    fresh_view = [chatbot, sources, confidence, chart, page_preview, turns, last_sources, lock_row, figure_lock]
    clear.click(handlers.clear, None, fresh_view, api_name="chat_clear", queue=False, **UNDOCUMENTED)
    # A conversation belongs to one knowledge base and document choice: switching starts a fresh view.
    # One listener per change (why: ui/common.py, above hide_if_shown), its steps in one server step.
    kb_changed = ChangeSteps()
    kb_changed.add(lambda request: handlers.clear(request), [], fresh_view)
    kb_changed.add(handlers.also_ask_choices, [kb_select, also_ask], [also_ask])
    kb_changed.add(lambda shown, request: hide_if_shown(shown), [export_download], [export_download])
    changed = kb_changed.wire(kb_select.change, "chat_kb_changed")
    doc_filter.change(handlers.clear, None, fresh_view, api_name="chat_doc_changed", queue=False, **UNDOCUMENTED)
    wire_picker_matches(service, doc_filter, kb_select, "chat_doc_matches")
    # In the browser alone (no server step): each event costs the page a pass over all its components.
    changed.then(None, kb_select, last_kb, js="(kb) => kb", api_name="chat_remember_kb", **UNDOCUMENTED)
    fresh = [send.click, question.submit, search.click, clear.click]
    wire_export(export_button, export_download, [kb_select, turns, last_sources], fresh)
    sources.click(
        handlers.show_page, [sources, kb_select, last_sources], page_preview, api_name="show_page", **UNDOCUMENTED
    )
    # A clicked [n] writes "answer:n" here and presses the button (assets/doclens.js)
    cite_reference = gr.Textbox(
        "", elem_id="cite-reference", elem_classes="dl-offscreen", container=False, show_label=False
    )
    cite_open = gr.Button(
        label("Open the cited page", "打开引用的页面"), elem_id="cite-open", elem_classes="dl-offscreen"
    )
    cite_open.click(
        handlers.show_cited,
        [cite_reference, kb_select, last_sources],
        page_preview,
        api_name="show_cited",
        **UNDOCUMENTED,
    )
    gallery.select(
        handlers.lock_figure,
        figures,
        [lock_row, lock_thumb, lock_text, figure_lock],
        api_name="lock_figure",
        **UNDOCUMENTED,
    )
    unlock.click(
        handlers.unlock_figure, None, [lock_row, figure_lock], api_name="unlock_figure", queue=False, **UNDOCUMENTED
    )

    tab = ChatTab(
        kb_select,
        doc_filter,
        summary,
        gallery,
        figures,
        empty_state,
        go_to_kb,
        refresh,
        last_kb,
        fresh_view,
        last_sources,
        [sources, confidence, chart],
    )
    picked_kb = kb_select.input(
        handlers.refresh_documents, [kb_select, doc_filter], doc_filter, api_name="chat_pick_kb", **UNDOCUMENTED
    )
    chain_panel(picked_kb, handlers, tab, "chat_kb")
    # A no-op first step (in the browser alone) so the document pick and the KB pick share the panel chain.
    picked_doc = doc_filter.input(None, None, None, api_name="chat_pick_doc", **UNDOCUMENTED)
    chain_panel(picked_doc, handlers, tab, "chat_doc")
    return tab


def streaming() -> tuple:
    """Send and Stop while an answer streams."""
    return gr.update(visible=False), gr.update(visible=True)


def idle() -> tuple:
    return gr.update(visible=True), gr.update(visible=False)


def build_figure_chip() -> tuple:
    """The locked figure as a chip: its thumbnail, file and page, and a button to unlock it."""
    with gr.Row(visible=False, elem_id="figure-lock", elem_classes="dl-chip") as lock_row:
        thumb = gr.Image(
            None,
            show_label=False,
            interactive=False,
            container=False,
            height=40,
            width=56,
            elem_id="figure-lock-thumb",
            buttons=[],
            min_width=56,
            scale=0,
        )
        chip_text = gr.Markdown("", elem_classes="dl-chip-text", elem_id="figure-lock-text")
        unlock = gr.Button("\u2715", elem_id="figure-unlock", size="sm", variant="secondary", min_width=40, scale=0)
    return lock_row, thumb, chip_text, unlock


def build_side_panel() -> tuple:
    """Confidence, score bars, the document summary and the figure gallery."""
    with gr.Column(scale=2, min_width=300, elem_classes="dl-side"):
        confidence = gr.HTML(panels.confidence_html(None, 0), elem_id="confidence")
        chart = gr.HTML("", elem_id="score-chart")
        with gr.Accordion(label("Summary", "摘要"), open=True, elem_classes="dl-summary-box"):
            summary = gr.Markdown("", elem_id="summary", latex_delimiters=LATEX_DELIMITERS)
        gallery = gr.Gallery(
            label=label("Figures: click one to ask about it", "图表：点击后提问"),
            elem_id="figure-gallery",
            columns=3,
            height=220,
            allow_preview=False,
            object_fit="contain",
            interactive=False,
            fit_columns=False,
        )
    return confidence, chart, summary, gallery


def chain_panel(event: Any, handlers: ChatHandlers, tab: ChatTab, name: str) -> Any:
    """After ``event``: reload the gallery, then the (possibly slow, model-written) summary."""
    return event.then(
        handlers.figure_gallery,
        [tab.kb_select, tab.doc_filter],
        [tab.gallery, tab.figures],
        api_name=f"{name}_figures",
        **UNDOCUMENTED,
    ).then(handlers.summary, [tab.kb_select, tab.doc_filter], tab.summary, api_name=f"{name}_summary", **UNDOCUMENTED)
