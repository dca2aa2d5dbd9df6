"""The Chat tab's handlers: ask, read the answer with its sources, pages and figures."""

from __future__ import annotations

import logging
from typing import Any, Generator, Iterator, Optional

import gradio as gr

from backend.service import DocLens
from backend.settings import LLMSettings
from backend.types import Answer, Figure, Source
from ui.chat import panels
from ui.common import (
    DocFilter,
    actor,
    doc_filter_dropdown,
    document_files,
    error_text,
    kb_dropdown,
    kb_names,
    selected_file,
    selected_files,
    shows_errors,
    warning_md,
)
from ui.i18n.messages import translate_figure_lead
from ui.i18n.strings import lang_of, text
from ui.icons import plain
from ui.latex import literal_text, md_literal, protect_currency
from ui.web_files import ShownFiles, shown_files

log = logging.getLogger(__name__)

SEND_OUTPUTS = 10  # chatbot, question, sources, confidence, chart, lock row, lock, turns, last sources, preview


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
        plain_message = {"role": message.get("role", "assistant"), "content": message_text(message)}
        if message.get("metadata"):
            plain_message["metadata"] = message["metadata"]
        normalized.append(plain_message)
    return normalized


def answer_markdown(answer: Answer, lang: str = "en", answer_number: int = 0) -> str:
    """Model output goes through the math delimiters (prices protected); quoted passages never do.
    ``answer_number``: which answer of the conversation this is (its citations open its own sources)."""
    if answer.quotes_passages and answer.figure is None:
        body = panels.extractive_markdown(answer, lang, answer_number)
    elif answer.mode == "extractive":  # about a figure, without a model: the figure's own text, quoted
        body = literal_text(translate_figure_lead(answer.answer, lang))
    else:
        body = panels.model_markdown(answer, lang, answer_number)
        body = translate_figure_lead(body, lang) if answer.figure is not None else body
    return body + panels.searched_in_note(answer, lang)


def sources_message(sources: list[Source], lang: str) -> dict[str, Any]:
    """A collapsible message under the answer listing its sources."""
    title = text(lang, "Sources ({n})", "来源（{n}）").format(n=len(sources))
    return {
        "role": "assistant",
        "content": panels.sources_markdown(sources, lang),
        "metadata": {"title": f"{plain('sources')} {title}", "status": "done"},
    }


def source_state(
    sources: list[Source], confidence: Optional[float] = None, search: str = "", answer: Optional[Answer] = None
) -> list[dict[str, Any]]:
    """What the page keeps of an answer's sources; the answer's confidence and a search's question ride
    along for the export (ui/chat/export.py), and what the side panel needs to be drawn again in another
    language (``panel_again``)."""
    extra: dict[str, Any] = {"confidence": confidence} if confidence is not None else {}
    extra.update({"search": search} if search else {})
    extra.update({"mode": answer.mode, "abstained": answer.abstained} if answer is not None else {})
    return [
        {"kb": s.kb, "file": s.file, "page": s.page, "text": s.text, "relevance": s.relevance, "scores": s.scores}
        | extra
        for s in sources
    ]


def panel_sources(kept: list[dict[str, Any]]) -> list[Source]:
    """The sources ``source_state`` kept, as far as the side panel shows them."""
    return [
        Source(
            file=item["file"],
            doc_id="",
            page=item["page"],
            page_end=item["page"],
            chunk_index=0,
            text=item.get("text", ""),
            relevance=item.get("relevance", 0.0),
            scores=dict(item.get("scores") or {}),
            kb=item.get("kb", ""),
        )
        for item in kept
    ]


def loading_note(loading: list[str], lang: str) -> str:
    """What the answer's bubble says while its knowledge bases still load after a start (the answer
    replaces it): the first question would otherwise wait seconds on an empty bubble."""
    if not loading:
        return ""
    names = "、".join(loading) if lang == "zh" else ", ".join(loading)
    note = text(
        lang,
        "Loading knowledge base {names} (DocLens has just started); the answer follows…",
        "正在加载知识库 {names}（DocLens 刚刚启动）；回答随后就到……",
    )
    return f"*{note.format(names=md_literal(names))}*"


def kbs_asked(kb: str, also: Optional[list[str]]) -> list[str]:
    """The knowledge base chosen, then the others the user also asks."""
    return [kb, *[other for other in dict.fromkeys(also or []) if other != kb]]


class ChatHandlers:
    """Event handlers: plain methods over the service, so each is easy to read and to test."""

    def __init__(self, service: DocLens, shown: Optional[ShownFiles] = None):
        self.service = service
        self.shown = shown or shown_files()  # images reach the page only through this narrow folder

    # -- page and knowledge-base refresh -------------------------------------------------------

    def refresh_choices(self, kb: Optional[str], doc_filter: DocFilter, request: gr.Request = None) -> tuple:
        kb_update = kb_dropdown(self.service, kb, actor(request))
        doc_update = doc_filter_dropdown(self.service, kb_update["value"], doc_filter, actor(request))
        if doc_update["value"] == selected_files(doc_filter):
            # The same pick written again reads as a change to Gradio, which starts a fresh conversation view
            # (a step of its own on a page load, whose view is fresh already; a new KB's change starts one).
            del doc_update["value"]
        return kb_update, doc_update

    def refresh_documents(self, kb: Optional[str], doc_filter: DocFilter, request: gr.Request = None) -> Any:
        return doc_filter_dropdown(self.service, kb, doc_filter, actor(request))

    def also_ask_choices(self, kb: Optional[str], also: Optional[list[str]], request: gr.Request = None) -> Any:
        """The other knowledge bases a question may also ask (none is asked until the user picks it)."""
        others = [name for name in kb_names(self.service, actor(request)) if name != kb]
        return gr.update(choices=others, value=[name for name in also or [] if name in others])

    def panel_file(self, kb: Optional[str], doc_filter: DocFilter, who: str) -> Optional[str]:
        """The document the side panel shows: the one picked, or the only document of the knowledge base
        (none when several are picked)."""
        file = selected_file(doc_filter)
        if file or not kb or selected_files(doc_filter):
            return file
        files = document_files(self.service, kb, who)
        return files[0] if len(files) == 1 else None

    @shows_errors("list figures", outputs=lambda line, kb, **_: _no_figures(kb, line))
    def figure_gallery(
        self, kb: Optional[str], doc_filter: DocFilter, request: gr.Request = None
    ) -> tuple[Any, list[dict[str, Any]]]:
        if not kb:
            return gr.update(value=[]), []
        picked = selected_files(doc_filter)
        figures = [f for file in picked or [None] for f in self.service.figures(kb, file, who=actor(request))]
        shown = [(f, self.shown.show(f.path)) for f in figures]
        shown = [(f, path) for f, path in shown if path]
        return (
            gr.update(value=[(path, self.figure_caption(f)) for f, path in shown]),
            [{"id": f.id, "page": f.page, "file": f.file, "path": path} for f, path in shown],
        )

    @staticmethod
    def figure_caption(figure: Figure) -> str:
        caption = f"{figure.file} p{figure.page}"
        return f"{caption}: {figure.caption[:60]}" if figure.caption else caption

    @shows_errors("summarise the document")
    def summary(self, kb: Optional[str], doc_filter: DocFilter, request: gr.Request = None) -> str:
        lang = lang_of(request)
        file = self.panel_file(kb, doc_filter, actor(request))
        if not file:
            return f"*{text(lang, 'Choose a document to see its summary.', '选择一个文档以查看摘要。')}*"
        return f"**{literal_text(file)}**\n\n" + protect_currency(self.service.summary(kb, file, who=actor(request)))

    # -- asking ---------------------------------------------------------------------------------

    def send(
        self,
        question: str,
        kb: Optional[str],
        doc_filter: DocFilter,
        messages: list[Any],
        turns: list[dict[str, str]],
        lock: Optional[dict[str, Any]],
        answer_sources: Optional[list[list[dict[str, Any]]]] = None,
        llm_profile: Optional[LLMSettings] = None,
        also: Optional[list[str]] = None,
        request: gr.Request = None,
    ) -> Iterator[tuple]:
        """Stream one answer. Outputs: chatbot, question, sources, confidence, chart, lock row, lock
        state, turns, every answer's sources (this one's last), page preview (hidden: the previous answer's
        page is stale). ``llm_profile``: the session's own model (Settings tab), if any; ``also``: other
        knowledge bases asked with ``kb`` (one ranking over them all)."""
        lang = lang_of(request)
        question = (question or "").strip()
        skip = gr.skip()
        if not question:
            yield (skip,) * SEND_OUTPUTS
            return
        messages = normalize_messages(messages) + [{"role": "user", "content": literal_text(question)}]
        if not kb:
            messages.append(
                {
                    "role": "assistant",
                    "content": warning_md(
                        text(
                            lang,
                            "Choose or create a knowledge base first (Knowledge base tab).",
                            "请先选择或创建知识库（知识库标签页）。",
                        )
                    ),
                }
            )
            yield messages, "", skip, skip, skip, skip, skip, skip, skip, skip
            return
        kbs = kbs_asked(kb, also)
        messages.append({"role": "assistant", "content": loading_note(self.service.loading(kbs), lang)})
        yield messages, "", skip, skip, skip, skip, skip, skip, skip, gr.update(value=None, visible=False)
        earlier = list(answer_sources or [])
        answer = yield from self._stream_answer(
            messages, kbs, question, turns, doc_filter, lock, llm_profile, lang, actor(request), earlier
        )
        if answer is not None:  # drawn in the language now: the user may have switched while it streamed
            yield self._final(messages, answer, question, turns, earlier, lang_of(request))

    def _stream_answer(
        self,
        messages: list[dict[str, Any]],
        kbs: list[str],
        question: str,
        turns: list[dict[str, str]],
        doc_filter: DocFilter,
        lock: Optional[dict[str, Any]],
        llm_profile: Optional[LLMSettings],
        lang: str,
        who: str,
        earlier: list[list[dict[str, Any]]],
    ) -> Generator[tuple, None, Optional[Answer]]:
        """The sources as soon as they are found, then the answer's text into the last bubble as it arrives;
        the final Answer, or None after a warning. ``who``: the login asking; ``earlier``: the sources of
        the conversation's earlier answers."""
        skip = gr.skip()
        answer: Optional[Answer] = None
        streamed = ""
        # documents of the first knowledge base (file names hold no "/")
        picked = [f"{kbs[0]}/{file}" if len(kbs) > 1 else file for file in selected_files(doc_filter)]
        try:
            for update in self.service.ask_stream(
                kbs,
                question,
                history=list(turns or []),
                doc=picked or None,
                figure_id=(lock or {}).get("id"),
                llm_profile=llm_profile,
                who=who,
            ):
                if update.done:
                    answer = update.answer
                    continue
                if update.sources is not None:  # found before the model writes: clickable while it writes
                    shown = [*earlier, source_state(update.sources, update.confidence)]
                    table = self.sources_dataset(update.sources, lang)
                    chart = panels.score_chart_html(update.sources, lang)
                    yield messages, skip, table, skip, chart, skip, skip, skip, shown, skip
                if not update.delta:
                    continue
                streamed += update.delta
                messages[-1]["content"] = protect_currency(streamed)
                yield messages, skip, skip, skip, skip, skip, skip, skip, skip, skip
        except Exception as exc:
            messages[-1]["content"] = warning_md(error_text(exc, "answer the question", lang))
            yield messages, skip, skip, skip, skip, gr.update(visible=False), None, skip, skip, skip
            return None
        if answer is None:  # the contract says this cannot happen; never leave an empty bubble
            messages[-1]["content"] = protect_currency(streamed) or warning_md(
                text(lang, "no answer was produced", "没有生成回答")
            )
            yield messages, skip, skip, skip, skip, gr.update(visible=False), None, skip, skip, skip
            return None
        return answer

    def _final(
        self,
        messages: list[dict[str, Any]],
        answer: Answer,
        question: str,
        turns: list[dict[str, str]],
        answer_sources: list[list[dict[str, Any]]],
        lang: str,
    ) -> tuple:
        # The answer's [n] carry its number: a click on an older answer opens that answer's source n
        messages[-1]["content"] = answer_markdown(answer, lang, answer_number=len(answer_sources))
        if answer.sources and not answer.quotes_passages:  # quoted answers already show each passage
            messages.append(sources_message(answer.sources, lang))
        turns = [*(turns or []), {"role": "user", "content": question}, {"role": "assistant", "content": answer.answer}]
        warn_below = self.service.settings.confidence.warn_below
        return (
            messages,
            gr.skip(),
            self.sources_dataset(answer.sources, lang),
            panels.confidence_html(answer, warn_below, lang),
            panels.score_chart_html(answer.sources, lang),
            gr.update(visible=False),
            None,
            turns,
            [*answer_sources, source_state(answer.sources, answer.confidence, answer=answer)],
            gr.skip(),
        )

    @staticmethod
    def sources_dataset(sources: list[Source], lang: str) -> gr.Dataset:
        return gr.Dataset(samples=panels.source_rows(sources), headers=panels.source_headers(lang))

    def panel_again(self, answer_sources: Optional[list], request: gr.Request = None) -> tuple:
        """The side panel of the last answer or search, drawn again in the session's language (after a
        language switch). Outputs: sources, confidence, chart."""
        lang = lang_of(request)
        kept = (answer_sources or [[]])[-1] or []
        sources = panel_sources(kept)
        shown = None
        if kept and "mode" in kept[0]:
            first = kept[0]
            shown = Answer("", first["mode"], first.get("confidence", 0.0), sources, abstained=first["abstained"])
        return (
            self.sources_dataset(sources, lang),
            panels.confidence_html(shown, self.service.settings.confidence.warn_below, lang),
            panels.score_chart_html(sources, lang),
        )

    def clear(self, request: gr.Request = None) -> tuple:
        """A fresh conversation view. Outputs: chatbot, sources, confidence, chart, page preview, turns,
        last sources, lock row, lock state."""
        lang = lang_of(request)
        return (
            [],
            self.sources_dataset([], lang),
            panels.confidence_html(None, 0, lang),
            "",
            gr.update(value=None, visible=False),
            [],
            [],
            gr.update(visible=False),
            None,
        )

    # -- sources and figures -------------------------------------------------------------------

    def show_page(
        self,
        index: Optional[int],
        kb: Optional[str],
        answer_sources: list[list[dict[str, Any]]],
        request: gr.Request = None,
    ) -> Any:
        """A row of the sources table (the last answer's, in ``panels.table_order``) was clicked. Output: page
        preview."""
        sources = answer_sources[-1] if answer_sources else []
        order = panels.table_order([float(s.get("relevance", 0.0)) for s in sources])
        row = int(index) if index is not None and 0 <= int(index) < len(order) else None
        return self._show_source(sources, None if row is None else order[row], kb, request)

    def show_cited(
        self, reference: str, kb: Optional[str], answer_sources: list[list[dict[str, Any]]], request: gr.Request = None
    ) -> Any:
        """A citation was clicked: ``reference`` is "answer:n" (assets/doclens.js). Output: page preview."""
        try:
            answer, number = (int(part) for part in (reference or "").split(":"))
        except ValueError:
            return gr.skip()
        if not 0 <= answer < len(answer_sources or []):
            return gr.skip()
        return self._show_source(answer_sources[answer], number - 1, kb, request)

    @shows_errors("show the page", outputs=lambda line, **_: _warned(line))
    def _show_source(
        self, sources: list[dict[str, Any]], index: Optional[int], kb: Optional[str], request: Optional[gr.Request]
    ) -> Any:
        if index is None or not kb or not sources or not 0 <= int(index) < len(sources):
            return gr.skip()
        source = sources[int(index)]
        where = source.get("kb") or kb
        path = self.service.page_image(where, source["file"], int(source["page"]), source["text"], actor(request))
        return gr.update(
            value=self.shown.show(path), label=f"[{int(index) + 1}] {source['file']} · p{source['page']}", visible=True
        )

    def lock_figure(self, figures: list[dict[str, Any]], evt: gr.SelectData, request: gr.Request = None) -> tuple:
        """Outputs: lock row, chip thumbnail, chip text, lock state."""
        index = evt.index if isinstance(evt.index, int) else (evt.index or [None])[0]
        if index is None or not 0 <= index < len(figures or []):
            return gr.skip(), gr.skip(), gr.skip(), gr.skip()
        figure = figures[index]
        return (gr.update(visible=True), figure.get("path"), panels.figure_chip_text(figure, lang_of(request)), figure)

    def unlock_figure(self) -> tuple:
        return gr.update(visible=False), None


def _no_figures(kb: Optional[str], line: str) -> tuple[Any, list[dict[str, Any]]]:
    log.warning("figures of %r: %s", kb, line)
    return gr.update(value=[]), []


def _warned(line: str) -> Any:
    """A toast instead of a page preview; the preview stays as it was."""
    gr.Warning(line)
    return gr.skip()
