"""Search without a model, in the Chat tab: the ranked passages of the question with their page and
score, each citation and each row of the sources table opening its page with the passage framed (the
chat's own preview: ``ChatHandlers.show_cited`` and ``show_page``). No model is asked: it works with no
API key. A search is not a turn of the conversation: a follow-up question does not read it.
"""

from __future__ import annotations

import logging
from typing import Any, Optional

import gradio as gr

from backend.service import DocLens
from backend.types import SearchResult
from ui.chat import panels
from ui.chat.handlers import ChatHandlers, normalize_messages, source_state
from ui.common import UNDOCUMENTED, DocFilter, actor, error_text, selected_files, warning_md
from ui.i18n.strings import label, lang_of, text
from ui.latex import document_text, literal_text, md_literal

log = logging.getLogger(__name__)

SEARCH_OUTPUTS = 7  # chatbot, question, sources, confidence, chart, every answer's sources, page preview


def search_markdown(result: SearchResult, lang: str, answer_number: int, abstains: bool = False) -> str:
    """The head line (how many passages, the confidence), then each passage as the document wrote it.
    ``abstains``: below ``confidence.abstain_below`` they are said to be the closest, not an answer."""
    if not result.sources:
        return text(lang, "Search: no passage matches the question.", "检索：没有与问题匹配的段落。")
    head = text(
        lang,
        "**Search** (no model): {n} passages · confidence {c:.0f}%",
        "**检索**（未使用模型）：{n} 个段落 · 置信度 {c:.0f}%",
    ).format(n=len(result.sources), c=result.confidence)
    passages = [head]
    if abstains:
        passages.append(
            "_"
            + text(
                lang,
                "Your documents do not seem to hold the answer: these are the closest passages, not an answer.",
                "您的文档中似乎没有答案：以下只是最接近的段落，并非答案。",
            )
            + "_"
        )
    for number, source in enumerate(result.sources, 1):
        relevance = text(lang, "relevance {r:.0f}%", "相关度 {r:.0f}%").format(r=source.relevance)
        quoted = "\n".join(
            f"> {document_text(line, lang)}" if line.strip() else ">" for line in source.text.splitlines()
        )
        passages.append(
            f"**{panels.cite(number, answer_number)} {md_literal(source.file)} · p{source.page}** · {relevance}\n{quoted}"
        )
    return "\n\n".join(passages)


class SearchHandlers:
    def __init__(self, service: DocLens):
        self.service = service

    def search(
        self,
        question: str,
        kb: Optional[str],
        doc_filter: DocFilter,
        messages: list[Any],
        answer_sources: Optional[list[list[dict[str, Any]]]],
        request: gr.Request = None,
    ) -> tuple:
        """Outputs: chatbot, question, sources table, the search's confidence, score chart, every answer's
        sources, page preview."""
        lang = lang_of(request)
        question = (question or "").strip()
        if not question:
            return (gr.skip(),) * SEARCH_OUTPUTS
        messages = normalize_messages(messages) + [{"role": "user", "content": literal_text(question)}]
        answer_sources = list(answer_sources or [])
        skip = gr.skip()
        if not kb:
            messages.append({"role": "assistant", "content": warning_md(choose_kb(lang))})
            return messages, "", skip, skip, skip, skip, skip
        try:
            result = self.service.search(kb, question, doc=selected_files(doc_filter) or None, who=actor(request))
        except Exception as exc:
            messages.append({"role": "assistant", "content": warning_md(error_text(exc, "search the documents", lang))})
            return messages, "", skip, skip, skip, skip, skip
        abstains = result.abstains(self.service.settings.confidence.abstain_below)
        messages.append({"role": "assistant", "content": search_markdown(result, lang, len(answer_sources), abstains)})
        return (
            messages,
            "",
            ChatHandlers.sources_dataset(result.sources, lang),
            panels.search_confidence_html(result, self.service.settings.confidence.warn_below, abstains, lang),
            panels.score_chart_html(result.sources, lang),
            [*answer_sources, source_state(result.sources, result.confidence, question)],
            gr.update(value=None, visible=False),
        )


def choose_kb(lang: str) -> str:
    return text(
        lang,
        "Choose or create a knowledge base first (Knowledge base tab).",
        "请先选择或创建知识库（知识库标签页）。",
    )


def search_button() -> gr.Button:
    return gr.Button(label("Search", "检索"), elem_id="search", scale=0, min_width=120)


def wire_search(button: gr.Button, handlers: SearchHandlers, inputs: list, outputs: list) -> None:
    """``inputs``: question, KB, document filter, chatbot, every answer's sources; ``outputs`` as
    ``SearchHandlers.search`` returns them."""
    button.click(handlers.search, inputs, outputs, api_name="chat_search", show_progress="minimal", **UNDOCUMENTED)
