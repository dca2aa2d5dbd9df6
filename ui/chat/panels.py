"""Small HTML/Markdown renderings of an answer: confidence meter, score bars, source lines, passages."""

from __future__ import annotations

import html
import re
from typing import Sequence

from backend.types import Answer, SearchResult, Source
from ui.i18n.messages import translate_notice
from ui.i18n.strings import text
from ui.icons import icon
from ui.latex import document_text, md_literal, protect_currency

SIGNALS = ("semantic", "keyword", "bm25", "fuzzy", "rank", "entity", "length", "document")
CHART_SOURCES = 3


def signal_name(lang: str, name: str) -> str:
    names = {
        "semantic": text(lang, "semantic", "语义"),
        "keyword": text(lang, "keyword", "关键词"),
        "bm25": text(lang, "BM25", "BM25"),
        "fuzzy": text(lang, "fuzzy", "模糊"),
        "rank": text(lang, "rank", "排名"),
        "entity": text(lang, "entity", "实体"),
        "length": text(lang, "length", "长度"),
        "document": text(lang, "document", "文档"),
    }
    return names.get(name, name)


def mode_name(lang: str, mode: str) -> str:
    names = {
        "llm": text(lang, "model answer", "模型回答"),
        "extractive": text(lang, "quoted passages", "引用段落"),
        "abstained": text(lang, "not in your documents", "文档中似乎没有答案"),
        "vision": text(lang, "figure answer", "图表回答"),
        "vision-fallback": text(lang, "figure answer (text model)", "图表回答（文本模型）"),
        "search": text(lang, "search, no model", "检索（未使用模型）"),
    }
    return names.get(mode, mode)


def confidence_html(answer: Answer | None, warn_below: float, lang: str = "en") -> str:
    if answer is None:
        return _empty_confidence(lang)
    # A vision answer reads the image itself: the calibrated value only covers the text passages found
    # beside it, which questions like "what does this show?" rarely match. Say so instead of warning.
    if answer.mode == "vision":
        explained = text(
            lang,
            "The answer reads the figure; this is how well the text passages match",
            "回答依据图片本身；此数值仅表示文本段落的匹配程度",
        )
        heading = text(lang, "Text sources", "文本来源")
        return _meter_html(answer.confidence, answer.mode, heading, f'<div class="dl-note">{explained}</div>', lang)
    low = answer.confidence < warn_below
    return _meter_html(answer.confidence, answer.mode, "", _warning(lang, answer.abstained, low), lang, low)


def search_confidence_html(result: SearchResult, warn_below: float, abstains: bool, lang: str = "en") -> str:
    """A search (no model) has the same calibrated confidence as an answer, and the same warnings:
    ``abstains`` (``SearchResult.abstains``) says its passages are the closest, not an answer."""
    if not result.sources:
        return _empty_confidence(lang)
    low = result.confidence < warn_below
    return _meter_html(result.confidence, "search", "", _warning(lang, abstains, low), lang, low)


def _empty_confidence(lang: str) -> str:
    return f'<div class="dl-confidence dl-empty">{text(lang, "Confidence", "置信度")}: –</div>'


def _warning(lang: str, abstained: bool, low: bool) -> str:
    if abstained:
        warn = text(
            lang,
            "Not in your documents, it seems: the passages are the closest, not an answer",
            "文档中似乎没有答案：这些段落只是最接近的内容，并非答案",
        )
        return f'<div class="dl-warn dl-abstained">{icon("warn")} {warn}</div>'
    if low:
        warn = text(lang, "Low confidence: check the sources", "置信度低：请核对来源")
        return f'<div class="dl-warn">{icon("warn")} {warn}</div>'
    return ""


def _meter_html(confidence: float, mode: str, heading: str, note: str, lang: str, low: bool = False) -> str:
    value = max(0.0, min(100.0, confidence))
    heading = heading or text(lang, "Confidence", "置信度")
    return (
        f'<div class="dl-confidence{" dl-low" if low else ""}" data-mode="{html.escape(mode)}">'
        f'<div class="dl-conf-head"><span>{heading}</span>'
        f'<strong class="dl-conf-value">{value:.0f}%</strong></div>'
        f'<div class="dl-meter"><span style="width:{value:.0f}%"></span></div>'
        f'{note}<div class="dl-mode">{html.escape(mode_name(lang, mode))}</div></div>'
    )


def score_chart_html(sources: Sequence[Source], lang: str = "en") -> str:
    """Bars of each reranker signal (0-100) for the top sources: light, no plotting library."""
    top = [s for s in sources[:CHART_SOURCES] if s.scores]
    if not top:
        return ""
    blocks = []
    for index, source in enumerate(top, 1):
        rows = "".join(_bar_row(lang, name, source.scores.get(name, 0.0)) for name in SIGNALS if name in source.scores)
        title = html.escape(f"[{index}] {source.file} p{source.page} · {source.relevance:.0f}%")
        blocks.append(
            f'<div class="dl-chart-source"><div class="dl-chart-title" title="{title}">{title}</div>{rows}</div>'
        )
    return (
        f'<div class="dl-chart"><div class="dl-panel-title">{text(lang, "Score breakdown", "得分构成")}</div>'
        f"{''.join(blocks)}</div>"
    )


def _bar_row(lang: str, name: str, value: float) -> str:
    width = max(0.0, min(100.0, value))
    return (
        f'<div class="dl-bar-row"><span class="dl-bar-name">{html.escape(signal_name(lang, name))}</span>'
        f'<span class="dl-bar"><span class="dl-bar-fill dl-{name}" style="width:{width:.0f}%"></span></span>'
        f'<span class="dl-bar-value">{value:.0f}</span></div>'
    )


def source_headers(lang: str) -> list[str]:
    return ["#", text(lang, "file", "文件"), text(lang, "page", "页"), text(lang, "relevance", "相关度")]


def table_order(relevances: Sequence[float]) -> list[int]:
    """The sources table's rows, as indices into the answer's sources: by the relevance as shown, highest
    first (a tie keeps the citation order). The ranking put a page the question names, or the fused
    follow-up's order, before a higher relevance: 60 %, 88 % read as a wrong order. Each row keeps its
    citation number, so [n] and the table still agree."""
    return sorted(range(len(relevances)), key=lambda i: (-int(f"{relevances[i]:.0f}"), i))


def source_rows(sources: Sequence[Source]) -> list[list[str]]:
    """Rows for the clickable sources table: number, file, page, relevance (in ``table_order``)."""
    rows = [[str(i), source_name(s, sources), str(s.page), f"{s.relevance:.0f}%"] for i, s in enumerate(sources, 1)]
    return [rows[i] for i in table_order([s.relevance for s in sources])]


def source_name(source: Source, sources: Sequence[Source]) -> str:
    """The file, and its knowledge base ("papers: a.pdf") when the sources come from several."""
    several = len({s.kb for s in sources}) > 1
    return f"{source.kb}: {source.file}" if several and source.kb else source.file


def sources_markdown(sources: Sequence[Source], lang: str = "en") -> str:
    """The list shown under a model's answer in the chat: quoted document text, so never math."""
    lines = []
    for index, source in enumerate(sources, 1):
        snippet = " ".join(source.text.split())[:140]
        lines.append(
            f"{index}. **{md_literal(source_name(source, sources))}** · p{source.page} · {source.relevance:.0f}%  \n"
            f"   <small>{document_text(snippet, lang)}…</small>"
        )
    return "\n".join(lines)


def extractive_markdown(answer: Answer, lang: str, answer_number: int = 0) -> str:
    """An answer without a model: the notice, then each passage once, quoted as the document wrote it."""
    notice = f"_{html.escape(translate_notice(answer.notice, lang))}_" if answer.notice else ""
    if not answer.sources:
        none = translate_notice(
            "The documents in this knowledge base contain no passage that matches the question.", lang
        )
        return "\n\n".join(part for part in (notice, none) if part)
    passages = []
    for number, (source, excerpt) in enumerate(zip(answer.sources, answer.excerpts), 1):
        quoted = "\n".join(f"> {document_text(line, lang)}" if line.strip() else ">" for line in excerpt.splitlines())
        relevance = text(lang, "relevance {r:.0f}%", "相关度 {r:.0f}%").format(r=source.relevance)
        passages.append(
            f"**{cite(number, answer_number)} {md_literal(source.file)} · p{source.page}** · {relevance}\n{quoted}"
        )
    return "\n\n".join([notice, *passages] if notice else passages)


_CITATION = re.compile(r"\[(\d{1,2})\](?!\()")


def cite(number: int, answer_number: int = 0) -> str:
    """A clickable citation of source ``number`` of the conversation's answer ``answer_number``: the page
    script opens that source's page preview (assets/doclens.js; a class, as the chat keeps classes)."""
    return f'<span class="dl-cite dl-answer-{answer_number}" role="link" tabindex="0">[{number}]</span>'


def clickable_citations(markdown: str, source_count: int, answer_number: int = 0) -> str:
    """[n] in a model's answer -> clickable citations, for the n that are real sources."""

    def link(match: re.Match[str]) -> str:
        number = int(match.group(1))
        return cite(number, answer_number) if 1 <= number <= source_count else match.group(0)

    return _CITATION.sub(link, markdown)


def model_markdown(answer: Answer, lang: str, answer_number: int = 0) -> str:
    text_md = clickable_citations(protect_currency(answer.answer), len(answer.sources), answer_number)
    if answer.notice and answer.notice not in answer.answer:
        text_md += f"\n\n> {icon('info')} {html.escape(translate_notice(answer.notice, lang))}"
    return text_md


def searched_in_note(answer: Answer, lang: str) -> str:
    """The question named its document: say where it was searched (empty otherwise)."""
    if not answer.searched_in:
        return ""
    where = text(lang, "Searched in: {where}", "检索范围：{where}").format(where=md_literal(answer.searched_in))
    return f"\n\n> {icon('info')} {where}"


def figure_chip_text(figure: dict, lang: str = "en") -> str:
    return text(lang, "Asking about: {file} · figure p{page}", "针对：{file} · 第 {page} 页图表").format(
        file=figure.get("file", ""), page=figure.get("page", "")
    )
