"""The answer of a PP-StructureV3 layout-parsing endpoint (PaddleOCR / PaddleX serving) as page text.

The endpoint answers ``{"errorCode": 0, "result": {"layoutParsingResults": [{"prunedResult": {...,
"parsing_res_list": [{"block_label", "block_content", "block_bbox"}, ...]}, "markdown": {"text",
"images", "isStart", "isEnd"}, "outputImages"}], "dataInfo": {...}}}``. Its Markdown writes a recognised
formula block as ``$$<LaTeX>$$`` (newer versions as ``$$\\n<LaTeX>\\n$$``) and inline formulas in text as
``$…$``. Every display formula becomes one paragraph ``$$ <LaTeX> $$`` on one line: the chunker keeps it
as one unit, and answers render it with KaTeX. Without Markdown the page is rebuilt from the blocks in
``parsing_res_list`` (already in reading order).
"""

from __future__ import annotations

import re
from typing import Any, Optional

FORMULA_LABELS = {"formula", "display_formula", "equation"}
INLINE_FORMULA_LABELS = {"inline_formula"}
# blocks that are no page text: pictures (their file is not fetched), running lines, page numbers
_SKIPPED_LABELS = {"image", "chart", "seal", "header", "footer", "number", "header_image", "footer_image", "aside_text"}

_MD_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)|<img\b[^>]*>|</?div\b[^>]*>", re.IGNORECASE)
_DISPLAY_MATH = re.compile(r"\$\$(.+?)\$\$|\\\[(.+?)\\\]", re.DOTALL)
_FORMULA_NUMBER = re.compile(r"^\(?\s*\d+(?:\.\d+)*[a-z]?\s*\)?$")


def page_text(result: Any) -> Optional[str]:
    """One ``layoutParsingResults`` entry as page text, or None when it holds neither Markdown nor blocks."""
    if not isinstance(result, dict):
        return None
    markdown = result.get("markdown")
    text = markdown.get("text") if isinstance(markdown, dict) else None
    if isinstance(text, str) and text.strip():
        return formulas_as_paragraphs(_strip_markup(text))
    pruned = result.get("prunedResult")
    blocks = pruned.get("parsing_res_list") if isinstance(pruned, dict) else None
    if isinstance(blocks, list):
        return formulas_as_paragraphs(_blocks_text(blocks))
    return None if text is None else ""


def _strip_markup(text: str) -> str:
    """Image links point at files we do not fetch, and centring divs are layout: keep the text only."""
    return re.sub(r"\n{3,}", "\n\n", _MD_IMAGE.sub("", text)).strip()


def _blocks_text(blocks: list) -> str:
    """Page text from the parsed blocks: formulas as ``$$…$$``, a formula number kept with its formula."""
    parts: list[str] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        label = str(block.get("block_label") or "text")
        content = str(block.get("block_content") or "").strip()
        if not content or label in _SKIPPED_LABELS:
            continue
        if label in FORMULA_LABELS:
            parts.append(f"$${_bare_latex(content)}$$")
        elif label in INLINE_FORMULA_LABELS:
            parts.append(f"${_bare_latex(content)}$")
        elif label == "formula_number" and parts and parts[-1].startswith("$$") and _FORMULA_NUMBER.match(content):
            parts[-1] = parts[-1][:-2] + f" \\tag{{{content.strip('()')}}}$$"
        else:
            parts.append(content)
    return "\n\n".join(parts)


def _bare_latex(content: str) -> str:
    """The LaTeX of a formula block without delimiters some versions already put around it."""
    content = content.strip()
    for left, right in (("$$", "$$"), ("\\[", "\\]"), ("$", "$")):
        if content.startswith(left) and content.endswith(right) and len(content) > len(left) + len(right):
            return content[len(left) : -len(right)].strip()
    return content


def formulas_as_paragraphs(text: str) -> str:
    """Every display formula (``$$…$$`` or ``\\[…\\]``) as ``$$ <LaTeX on one line> $$`` in a paragraph of
    its own, so that the chunker never splits it and never runs it into the text beside it."""

    def one_line(match: re.Match[str]) -> str:
        latex = " ".join((match.group(1) or match.group(2) or "").split())
        return f"\n\n$$ {latex} $$\n\n" if latex else ""

    text = _DISPLAY_MATH.sub(one_line, text)
    return re.sub(r"[ \t]*\n[ \t]*\n\s*", "\n\n", text).strip()
