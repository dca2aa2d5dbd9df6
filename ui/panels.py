"""Small HTML/Markdown renderings of an answer: confidence meter, score bars, source lines."""

from __future__ import annotations

import html
from typing import Sequence

from backend.types import Answer, Source
from ui.common import bi
from ui.latex import protect_currency

SIGNALS = ("semantic", "keyword", "fuzzy", "rank", "entity", "length")
CHART_SOURCES = 3


def confidence_html(answer: Answer | None, warn_below: float) -> str:
    if answer is None:
        return f'<div class="dl-confidence dl-empty">{bi("Confidence", "置信度")}: –</div>'
    value = max(0.0, min(100.0, answer.confidence))
    # A vision answer reads the image itself: the calibrated value only covers the text passages found
    # beside it, which questions like "what does this show?" rarely match. Say so instead of warning.
    about_figure = answer.mode == "vision"
    low = value < warn_below and not about_figure
    label = bi("Text sources", "文本来源") if about_figure else bi("Confidence", "置信度")
    if about_figure:
        explained = bi("The answer reads the figure; this is how well the text passages match",
                       "回答依据图片本身；此数值仅表示文本段落的匹配程度")
        note = f'<div class="dl-note">{explained}</div>'
    elif low:
        note = f'<div class="dl-warn">⚠️ {bi("Low confidence: check the sources", "置信度低：请核对来源")}</div>'
    else:
        note = ""
    return (f'<div class="dl-confidence{" dl-low" if low else ""}">'
            f'<div class="dl-conf-head"><span>{label}</span>'
            f'<strong class="dl-conf-value">{value:.0f}%</strong></div>'
            f'<div class="dl-meter"><span style="width:{value:.0f}%"></span></div>'
            f'{note}<div class="dl-mode">{html.escape(answer.mode)}</div></div>')


def score_chart_html(sources: Sequence[Source]) -> str:
    """Bars of each reranker signal (0-100) for the top sources: light, no plotting library."""
    top = [s for s in sources[:CHART_SOURCES] if s.scores]
    if not top:
        return ""
    blocks = []
    for index, source in enumerate(top, 1):
        rows = "".join(_bar_row(name, source.scores.get(name, 0.0)) for name in SIGNALS if name in source.scores)
        title = html.escape(f"[{index}] {source.file} p{source.page} · {source.relevance:.0f}%")
        blocks.append(f'<div class="dl-chart-source"><div class="dl-chart-title" title="{title}">{title}</div>'
                      f'{rows}</div>')
    return (f'<div class="dl-chart"><div class="dl-panel-title">{bi("Score breakdown", "得分构成")}</div>'
            f'{"".join(blocks)}</div>')


def _bar_row(name: str, value: float) -> str:
    width = max(0.0, min(100.0, value))
    return (f'<div class="dl-bar-row"><span class="dl-bar-name">{name}</span>'
            f'<span class="dl-bar"><span class="dl-bar-fill dl-{name}" style="width:{width:.0f}%"></span></span>'
            f'<span class="dl-bar-value">{value:.0f}</span></div>')


def source_label(index: int, source: Source) -> str:
    pages = f"p{source.page}" if source.page_end in (0, source.page) else f"p{source.page}-{source.page_end}"
    return f"[{index}] {source.file} · {pages} · {source.relevance:.0f}%"


def source_rows(sources: Sequence[Source]) -> list[list[str]]:
    """Rows for the clickable sources table: number, file, page, relevance."""
    return [[str(i), s.file, str(s.page), f"{s.relevance:.0f}%"] for i, s in enumerate(sources, 1)]


def sources_markdown(sources: Sequence[Source]) -> str:
    """The list shown under an answer in the chat."""
    lines = []
    for index, source in enumerate(sources, 1):
        snippet = " ".join(source.text.split())[:140]
        lines.append(f"{index}. **{_md_escape(source.file)}** · p{source.page} · {source.relevance:.0f}%  \n"
                     f"   <small>{protect_currency(html.escape(snippet))}…</small>")
    return "\n".join(lines)


def _md_escape(text: str) -> str:
    return html.escape(text).replace("*", "\\*").replace("_", "\\_")


def figure_chip_text(page: int) -> str:
    return f"🖼️ figure p{page} · 图 p{page}"
