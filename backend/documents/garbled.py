"""Text drawn in a font without a usable Unicode map: a Chinese font embedded without ToUnicode reads as
ASCII noise ("Short Text: -C-=.DF'&$EBH+" for 水利部水资源司…, LCSTS p4). pdfium reports such glyphs as
unmapped. A font whose unmapped glyphs on a page include control codes (which no text holds) and are
mostly not letters or digits draws noise there; the lines holding its glyphs are read by OCR where they
stand, and without OCR its glyphs are left out. Unmapped glyphs that read as words (a plot's labels, a
font in an ASCII encoding) are kept as they are.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import replace
from typing import Callable, Optional, Sequence

from PIL import Image

from backend.documents.layout import UNREADABLE, BBox, Char, TextLine, line_from_chars

log = logging.getLogger(__name__)

MIN_NOISE_GLYPHS = 8  # a font's unmapped glyphs on the page before it can be taken for noise
MIN_CONTROL_CODES = 2  # ... of which control codes (a hyphen drawn at one is not noise)
MAX_WORDLIKE_SHARE = 0.5  # letters and digits among them: more reads as text in an ASCII-like encoding
MIN_DISTINCT = 10  # different glyphs among them: a symbol font's one square or arrow is no text to read
MIN_LINE_NOISE = 3  # a line's noise glyphs before it is worth reading by OCR (fewer are left out)
MAX_LINES_PER_PAGE = 100  # lines read by OCR on one page; beyond, their noise is left out
MAX_LINES_PER_DOCUMENT = 400  # and in one document (LCSTS's page of Chinese examples holds 25)

Recognize = Callable[[Image.Image], str]
Render = Callable[[BBox], Image.Image]


def noise_fonts(lines: Sequence[TextLine]) -> set[str]:
    """The fonts whose unmapped glyphs on this page are noise."""
    glyphs: dict[str, list[str]] = defaultdict(list)
    for line in lines:
        for char in line.chars:
            if char.unmapped_font:
                glyphs[char.unmapped_font].append(char.text)
    return {font for font, texts in glyphs.items() if _is_noise(texts)}


def _is_noise(texts: list[str]) -> bool:
    if len(texts) < MIN_NOISE_GLYPHS or sum(1 for t in texts if t == UNREADABLE) < MIN_CONTROL_CODES:
        return False
    wordlike = sum(1 for t in texts if t.isalnum())
    return wordlike <= MAX_WORDLIKE_SHARE * len(texts) and len(set(texts)) >= MIN_DISTINCT


def read_garbled(
    lines: Sequence[TextLine],
    render: Optional[Render],
    recognize: Optional[Recognize],
    max_lines: int = MAX_LINES_PER_PAGE,
    fonts: Optional[set[str]] = None,
) -> tuple[list[TextLine], int]:
    """The page's lines with every line holding noise read by OCR (``render`` draws a box of the page,
    ``recognize`` reads it; at most ``max_lines`` of them), or without its noise when there is no OCR or
    it reads nothing; the control codes left in other lines are dropped. Also: how many lines OCR read.
    ``fonts``: the page's ``noise_fonts``, when the caller has them already."""
    fonts = noise_fonts(lines) if fonts is None else fonts
    out: list[TextLine] = []
    read = 0
    for line in lines:
        if not any(c.unmapped_font in fonts or c.text == UNREADABLE for c in line.chars):
            out.append(line)
            continue
        noisy = sum(1 for c in line.chars if c.unmapped_font in fonts)
        if noisy >= MIN_LINE_NOISE and render is not None and recognize is not None and read < max_lines:
            read += 1
            text = _ocr_line(line, render, recognize)
            if text:
                out.append(_line_reading(line, text))
                continue
        kept = line_from_chars([c for c in line.chars if c.unmapped_font not in fonts and c.text != UNREADABLE])
        if kept is not None:
            out.append(replace(kept, turned=line.turned))
    return out, read


def _ocr_line(line: TextLine, render: Render, recognize: Recognize) -> str:
    pad = 0.2 * max(line.size, line.y1 - line.y0)
    try:
        return " ".join(recognize(render((line.x0 - pad, line.y0 - pad, line.x1 + pad, line.y1 + pad))).split())
    except Exception as exc:  # noqa: BLE001 - one line is not worth the page
        log.warning("a line at %s not read by OCR (%s)", [round(v) for v in line.box], exc)
        return ""


def _line_reading(line: TextLine, text: str) -> TextLine:
    """The line as OCR read it: its chars spread evenly over its box (OCR gives no glyph boxes)."""
    width = (line.x1 - line.x0) / len(text)
    chars = [
        Char(ch, (line.x0 + i * width, line.y0, line.x0 + (i + 1) * width, line.y1), line.size)
        for i, ch in enumerate(text)
    ]
    return replace(line, text=text, chars=chars)
