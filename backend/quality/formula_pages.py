"""Pages with known formulas for bench-formulas: a small typesetter for the LaTeX it generates (scripts,
fractions, radicals, accents, parentheses), drawing each formula as text (a real text layer), as glyph
outlines (one vector path per glyph, no text) or inside a scanned page (the text page rendered to an
image).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from backend.documents.formulas.symbols import CHAR_OF

FORMULA_FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf"
CONTEXT_FONTS = {"en": (FORMULA_FONT, None), "zh": ("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc", 0)}
KINDS = ("text", "drawn", "scanned")
FORMULAS = (
    r"\mathrm{Attention}(Q,K,V)=\mathrm{softmax}(\frac{QK^T}{\sqrt{d_k}})V",
    r"\mathrm{CAGR}=(\frac{\mathrm{Ending Value}}{\mathrm{Beginning Value}})^{1/n}-1",
    r"\hat{H}=\frac{\hat{p}^2}{2m}+\frac{1}{2}m\omega^2\hat{x}^2",
    r"E_n=\hbar\omega(n+\frac{1}{2})",
    r"E_0=\frac{1}{2}\hbar\omega",
    r"x=\frac{-b\pm\sqrt{b^2-4ac}}{2a}",
    r"e^{i\pi}+1=0",
    r"\sigma=\sqrt{\frac{1}{N}\sum_{i=1}^{N}(x_i-\mu)^2}",
    r"F=G\frac{m_1m_2}{r^2}",
    r"\lambda=\frac{h}{p}",
    r"a^2+b^2=c^2",
    r"\Delta x\Delta p\geq\frac{\hbar}{2}",
)
CONTEXT = {
    "en": ("Section {n}. The relation below is used throughout the model.", "Here each symbol has its usual meaning."),
    "zh": ("第{n}节。下面的关系式在整个模型中使用。", "其中各符号的含义与前文相同。"),
}
_SIZE = 13.0
_SCRIPT = 0.7
_DRAW_SCALE = 5.0  # pixels per point of a glyph drawn as an outline
_SCAN_DPI = 200


@dataclass
class FormulaPage:
    number: int  # 1-based page of its PDF
    lang: str
    kind: str
    latex: str
    context: tuple[str, str]


# ------------------------------------------------------------------------------ LaTeX to boxes


@dataclass
class _Box:
    kind: str  # glyph, row, script, frac, sqrt, accent
    text: str = ""
    parts: tuple = ()
    size: float = _SIZE
    width: float = 0.0
    ascent: float = 0.0
    descent: float = 0.0


_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|.", re.S)


def _tokens(latex: str) -> list[str]:
    return _TOKEN.findall(latex)


def _group(tokens: list[str], at: int) -> tuple[list[str], int]:
    """The tokens of one argument at ``at`` (a braced group or one token) and the index after it."""
    if tokens[at] != "{":
        return [tokens[at]], at + 1
    depth, end = 0, at
    while True:
        depth += {"{": 1, "}": -1}.get(tokens[end], 0)
        if depth == 0:
            return tokens[at + 1 : end], end + 1
        end += 1


def _parse(tokens: list[str], size: float) -> _Box:
    items: list[_Box] = []
    at = 0
    while at < len(tokens):
        token = tokens[at]
        if token in ("^", "_"):
            arg, at = _group(tokens, at + 1)
            base = items.pop() if items else _glyph("", size)
            sup, sub = (base.parts[1], base.parts[2]) if base.kind == "script" else (None, None)
            script = _parse(arg, size * _SCRIPT)
            sup, sub = (script, sub) if token == "^" else (sup, script)
            items.append(_script(base.parts[0] if base.kind == "script" else base, sup, sub))
            continue
        if token in (r"\frac", r"\sqrt", r"\hat", r"\mathrm", "{"):
            arg, at = _group(tokens, at + 1 if token != "{" else at)
            if token == r"\frac":
                den, at = _group(tokens, at)
                items.append(_frac(_parse(arg, size), _parse(den, size)))
            elif token == r"\sqrt":
                items.append(_sqrt(_parse(arg, size)))
            elif token == r"\hat":
                items.append(_accent(_parse(arg, size)))
            else:
                items.extend(_parse(arg, size).parts)
            continue
        items.append(_glyph(CHAR_OF.get(token, token), size))
        at += 1
    return _row(items, size)


def _glyph(text: str, size: float) -> _Box:
    from reportlab.pdfbase.pdfmetrics import stringWidth

    return _Box(
        "glyph", text, size=size, width=stringWidth(text, _font(), size), ascent=0.75 * size, descent=0.22 * size
    )


def _row(items: Sequence[_Box], size: float) -> _Box:
    items = tuple(items)
    return _Box(
        "row",
        parts=items,
        size=size,
        width=sum(b.width for b in items),
        ascent=max((b.ascent for b in items), default=0.7 * size),
        descent=max((b.descent for b in items), default=0.2 * size),
    )


def _script(base: _Box, sup: Optional[_Box], sub: Optional[_Box]) -> _Box:
    width = base.width + max(sup.width if sup else 0.0, sub.width if sub else 0.0)
    ascent = max(base.ascent, 0.45 * base.size + sup.ascent) if sup else base.ascent
    descent = max(base.descent, 0.25 * base.size + sub.descent) if sub else base.descent
    return _Box("script", parts=(base, sup, sub), size=base.size, width=width, ascent=ascent, descent=descent)


def _frac(num: _Box, den: _Box) -> _Box:
    axis, gap = 0.28 * num.size, 0.18 * num.size
    width = max(num.width, den.width) + 0.3 * num.size
    ascent = axis + gap + num.descent + num.ascent
    descent = den.ascent + gap - axis + den.descent
    return _Box("frac", parts=(num, den), size=num.size, width=width, ascent=ascent, descent=descent)


def _sqrt(inner: _Box) -> _Box:
    sign = _glyph("√", inner.size)
    ascent = inner.ascent + 0.15 * inner.size
    return _Box(
        "sqrt",
        parts=(inner, sign),
        size=inner.size,
        width=sign.width + inner.width,
        ascent=ascent,
        descent=inner.descent,
    )


def _accent(inner: _Box) -> _Box:
    return _Box(
        "accent",
        parts=(inner,),
        size=inner.size,
        width=inner.width,
        ascent=inner.ascent + 0.25 * inner.size,
        descent=inner.descent,
    )


def _font() -> str:
    return _register("formula", FORMULA_FONT, None)


def _register(name: str, file: str, index: Optional[int]) -> str:
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

    if name not in pdfmetrics.getRegisteredFontNames():
        pdfmetrics.registerFont(TTFont(name, file, subfontIndex=index) if index is not None else TTFont(name, file))
    return name


# --------------------------------------------------------------------------------- drawing


class _Pen:
    """Draws glyphs as text or as outlines (a path of pixel runs per glyph), and rules as paths."""

    def __init__(self, canvas: Any, drawn: bool) -> None:
        self.canvas = canvas
        self.drawn = drawn
        self._fonts: dict[float, Any] = {}

    def glyph(self, text: str, x: float, baseline: float, size: float) -> None:
        if not text:
            return
        if not self.drawn:
            self.canvas.setFont(_font(), size)
            self.canvas.drawString(x, baseline, text)
            return
        from reportlab.pdfbase.pdfmetrics import stringWidth

        for ch in text:
            self._outline(ch, x, baseline, size)
            x += stringWidth(ch, _font(), size)

    def _outline(self, ch: str, x: float, baseline: float, size: float) -> None:
        from PIL import Image, ImageDraw, ImageFont

        font = self._fonts.get(size) or self._fonts.setdefault(
            size, ImageFont.truetype(FORMULA_FONT, size * _DRAW_SCALE)
        )
        x0, y0, x1, y1 = font.getbbox(ch, anchor="ls")
        if x1 <= x0 or y1 <= y0:
            return
        image = Image.new("L", (x1 - x0, y1 - y0), 0)
        ImageDraw.Draw(image).text((-x0, -y0), ch, fill=255, font=font, anchor="ls")
        path = self.canvas.beginPath()
        width, pixels = image.width, image.tobytes()  # one byte per pixel, row by row
        for row in range(image.height):
            col = 0
            while col < width:
                if pixels[row * width + col] < 128:
                    col += 1
                    continue
                start = col
                while col < width and pixels[row * width + col] >= 128:
                    col += 1
                top = baseline - (y0 + row) / _DRAW_SCALE
                path.rect(
                    x + (x0 + start) / _DRAW_SCALE, top - 1 / _DRAW_SCALE, (col - start) / _DRAW_SCALE, 1 / _DRAW_SCALE
                )
        self.canvas.drawPath(path, stroke=0, fill=1)

    def rule(self, x: float, y: float, width: float, thickness: float) -> None:
        self.canvas.rect(x, y, width, thickness, stroke=0, fill=1)


def _draw(pen: _Pen, box: _Box, x: float, baseline: float) -> None:
    if box.kind == "glyph":
        pen.glyph(box.text, x, baseline, box.size)
    elif box.kind == "row":
        for part in box.parts:
            _draw(pen, part, x, baseline)
            x += part.width
    elif box.kind == "script":
        base, sup, sub = box.parts
        _draw(pen, base, x, baseline)
        if sup is not None:
            _draw(pen, sup, x + base.width, baseline + 0.45 * base.size)
        if sub is not None:
            _draw(pen, sub, x + base.width, baseline - 0.25 * base.size)
    elif box.kind == "frac":
        num, den = box.parts
        axis, gap, pad = 0.28 * box.size, 0.18 * box.size, 0.15 * box.size
        pen.rule(x + pad / 2, baseline + axis - 0.3, box.width - pad, 0.6)
        _draw(pen, num, x + (box.width - num.width) / 2, baseline + axis + gap + num.descent)
        _draw(pen, den, x + (box.width - den.width) / 2, baseline + axis - gap - den.ascent)
    elif box.kind == "sqrt":
        inner, sign = box.parts
        _draw(pen, sign, x, baseline)
        pen.rule(x + sign.width * 0.9, baseline + box.ascent - 0.6, inner.width + 0.1 * sign.width, 0.6)
        _draw(pen, inner, x + sign.width, baseline)
    elif box.kind == "accent":
        (inner,) = box.parts
        _draw(pen, inner, x, baseline)
        pen.glyph("ˆ", x + inner.width / 2 - 0.2 * box.size, baseline + 0.2 * box.size, box.size)


def typeset(latex: str, size: float = _SIZE) -> Any:
    """The box of a formula (its ``width``, ``ascent``, ``descent`` in points at ``size``)."""
    return _parse(_tokens(latex), size)


def draw_formula(canvas: Any, latex: str, x: float, baseline: float, drawn: bool = False, size: float = _SIZE) -> Any:
    """The formula set on a reportlab canvas with its left end at ``x``; its box."""
    box = typeset(latex, size)
    _draw(_Pen(canvas, drawn), box, x, baseline)
    return box


# ----------------------------------------------------------------------------------- pages


def write_formula_pdf(path: Path, lang: str, kind: str, formulas: Sequence[str] = FORMULAS) -> list[FormulaPage]:
    """One page per formula between two sentences of context; ``kind``: text, drawn or scanned."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen.canvas import Canvas

    scan = io.BytesIO()
    canvas = Canvas(scan if kind == "scanned" else str(path), pagesize=A4)
    context_font = _register(f"context-{lang}", *CONTEXT_FONTS[lang])
    pages = []
    for number, latex in enumerate(formulas, start=1):
        before, after = (sentence.format(n=number) for sentence in CONTEXT[lang])
        _draw_page(canvas, context_font, before, after, latex, number, _Pen(canvas, drawn=kind == "drawn"))
        canvas.showPage()
        pages.append(FormulaPage(number, lang, kind, latex, (before, after)))
    canvas.save()
    if kind == "scanned":
        _write_scan(path, scan.getvalue())
    return pages


def _draw_page(canvas: Any, font: str, before: str, after: str, latex: str, number: int, pen: _Pen) -> None:
    width, height = canvas._pagesize
    canvas.setFont(font, 11)
    canvas.drawString(72, height - 110, before)
    box = typeset(latex)
    baseline = height - 150 - box.ascent
    _draw(pen, box, (width - box.width) / 2, baseline)
    if number % 2:
        canvas.setFont(_font(), 11)
        canvas.drawRightString(width - 72, baseline, f"({number})")
    canvas.setFont(font, 11)
    canvas.drawString(72, baseline - box.descent - 40, after)


def _write_scan(path: Path, pdf: bytes) -> None:
    """Each page rendered to a grey image, and the images as the pages of a new PDF (no text layer)."""
    import pypdfium2 as pdfium
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen.canvas import Canvas

    document = pdfium.PdfDocument(pdf)
    canvas = None
    try:
        for page in document:
            width, height = page.get_size()
            image = page.render(scale=_SCAN_DPI / 72).to_pil().convert("L")
            canvas = canvas or Canvas(str(path), pagesize=(width, height))
            canvas.drawImage(ImageReader(image), 0, 0, width, height)
            canvas.showPage()
            page.close()
    finally:
        document.close()
    if canvas is not None:
        canvas.save()
