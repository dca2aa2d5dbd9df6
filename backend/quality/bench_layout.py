"""Reading-order benchmark: bench texts laid out in two and three columns, read back, compared.

Each page has a full-width title, sometimes a full-width abstract, columns of text flowing through
reportlab frames, a full-width figure with its caption between two bands of columns, and column-wide
figures with captions inside the flow. The generator records the text in the order a reader reads it;
the metric is the normalised edit similarity (1 - Levenshtein / longer length) per page between that
text and what DocLens extracts, natively and from a scan of the same page (rendered, then OCR'd).
"""

from __future__ import annotations

import importlib.util
import io
import logging
import random
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

import pypdfium2 as pdfium
from PIL import Image, ImageDraw

from backend.errors import DocLensError
from backend.quality.bench_ingest import format_figures
from backend.text import CJK

log = logging.getLogger(__name__)

_FONTS = {
    "en": ("/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf", None),
    "zh": ("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc", 0),
}
# (columns, figure band between the columns?, abstract?, a figure inside a column?)
LAYOUTS = ((2, True, True, False), (3, True, False, True), (2, False, False, True), (3, False, True, False))
# distinct titles: one repeated on every page would be dropped as a running header
_TITLES_EN = (
    "Reading order across two columns",
    "Three narrow columns and a wide chart",
    "Columns with a figure inside",
    "An abstract above three columns",
)
_TITLES_ZH = ("双栏排版的阅读顺序", "三栏排版与整页宽图表", "栏内插图与图注", "摘要在上方的三栏排版")
_MARGIN = 54.0
_GAP = 18.0


@dataclass
class BenchPage:
    lang: str
    columns: int
    truth: str  # the text in reading order


@dataclass
class _Canvas:
    """A page being drawn plus the texts placed on it in reading order."""

    canvas: Any
    placed: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------------ source text


def source_paragraphs(docs: Path, lang: str, limit: int = 200) -> list[str]:
    """Paragraphs of the bench documents' own text (their running title and page numbers left out)."""
    paragraphs: list[str] = []
    for path in sorted(docs.glob("*.pdf")):
        pdf = pdfium.PdfDocument(str(path))
        try:
            for index in range(len(pdf)):
                textpage = pdf[index].get_textpage()
                lines = textpage.get_text_range().split("\r\n")[3:]  # title, "- n -", title again
                textpage.close()
                if len(lines) > 5:  # a scan has no text layer: skipped
                    paragraphs += _paragraphs_of(lines, lang)
        finally:
            pdf.close()
        if len(paragraphs) >= limit:
            break
    return paragraphs[:limit]


def _paragraphs_of(lines: Sequence[str], lang: str) -> list[str]:
    joined = ("" if lang == "zh" else " ").join(ln.strip() for ln in lines if ln.strip())
    sentences = re.findall(r"[^。！？]+[。！？]" if lang == "zh" else r"[^.!?]+[.!?]+(?:\s|$)", joined)
    step = 3 if lang == "zh" else 4
    return [
        ("" if lang == "zh" else " ").join(s.strip() for s in sentences[i : i + step])
        for i in range(0, len(sentences) - step + 1, step)
    ]


# ---------------------------------------------------------------------------------------- layout


def write_bench_pdf(
    path: Path, paragraphs: Sequence[str], lang: str, layouts=LAYOUTS, seed: int = 7, gap: float = _GAP
) -> list[BenchPage]:
    """One page per layout, filled from ``paragraphs`` in order; returns each page's true text. ``gap``:
    the whitespace between columns, in points."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen.canvas import Canvas

    font = _register_font(lang)
    rng = random.Random(seed)
    canvas = Canvas(str(path), pagesize=A4)
    story = list(paragraphs)
    pages = []
    for number, layout in enumerate(layouts, start=1):
        page = _Canvas(canvas)
        _draw_page(page, story, layout, font, lang, rng, number, gap)
        canvas.showPage()
        pages.append(BenchPage(lang, layout[0], " ".join(page.placed)))
    canvas.save()
    return pages


def _register_font(lang: str) -> str:
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

    name = f"bench-{lang}"
    if name not in pdfmetrics.getRegisteredFontNames():
        file, index = _FONTS[lang]
        pdfmetrics.registerFont(TTFont(name, file, subfontIndex=index) if index is not None else TTFont(name, file))
    return name


def _styles(font: str, lang: str) -> dict[str, Any]:
    from reportlab.lib.enums import TA_JUSTIFY
    from reportlab.lib.styles import ParagraphStyle

    cjk = "CJK" if lang == "zh" else None
    body = ParagraphStyle(
        "body", fontName=font, fontSize=9.5, leading=12.5, alignment=TA_JUSTIFY, spaceAfter=5, wordWrap=cjk
    )
    return {
        "body": body,
        "title": ParagraphStyle("title", parent=body, fontSize=17, leading=21, spaceAfter=0, alignment=1),
        "caption": ParagraphStyle("caption", parent=body, fontSize=8.5, leading=11, spaceAfter=0),
    }


def _draw_page(
    page: _Canvas,
    story: list[str],
    layout: tuple,
    font: str,
    lang: str,
    rng: random.Random,
    number: int,
    gap: float = _GAP,
) -> None:
    from reportlab.lib.pagesizes import A4

    columns, figure_band, abstract, column_figure = layout
    styles = _styles(font, lang)
    width, height = A4
    top = height - _MARGIN
    title = (_TITLES_ZH if lang == "zh" else _TITLES_EN)[(number - 1) % len(_TITLES_EN)]
    top = _full_width(page, [(title, styles["title"])], top, width) - 14
    if abstract and story:
        top = _full_width(page, [(story.pop(0), styles["body"])], top, width) - 10
    if figure_band:
        middle = _MARGIN + 0.45 * (top - _MARGIN)
        _columns(page, story, columns, top, middle + 150, width, styles, rng, column_figure, gap)
        _full_width_figure(page, middle, width, styles, rng, number, lang)
        _columns(page, story, columns, middle - 8, _MARGIN, width, styles, rng, False, gap)
    else:
        _columns(page, story, columns, top, _MARGIN, width, styles, rng, column_figure, gap)


def _full_width(page: _Canvas, items: Iterable[tuple[str, Any]], top: float, width: float) -> float:
    """Paragraphs across the page from ``top`` down; returns where they end."""
    from reportlab.platypus import Paragraph

    for text, style in items:
        paragraph = Paragraph(_escape(text), style)
        _, used = paragraph.wrap(width - 2 * _MARGIN, top)
        paragraph.drawOn(page.canvas, _MARGIN, top - used)
        page.placed.append(text)
        top -= used + style.spaceAfter
    return top


def _full_width_figure(
    page: _Canvas, middle: float, width: float, styles: dict, rng: random.Random, number: int, lang: str
) -> None:
    from reportlab.lib.utils import ImageReader

    box_width = width - 2 * _MARGIN
    page.canvas.drawImage(ImageReader(_chart(rng, 900, 220)), _MARGIN, middle + 30, box_width, 110)
    caption = (
        f"图{number}：各栏之间的整页宽图表，图注位于图下方。"
        if lang == "zh"
        else f"Figure {number}: a chart as wide as the page, with its caption under it."
    )
    _full_width(page, [(caption, styles["caption"])], middle + 24, width)


def _columns(
    page: _Canvas,
    story: list[str],
    columns: int,
    top: float,
    bottom: float,
    width: float,
    styles: dict,
    rng: random.Random,
    column_figure: bool,
    gap: float = _GAP,
) -> None:
    """Flow ``story`` through the columns between ``top`` and ``bottom`` (consumed paragraphs removed)."""
    from reportlab.platypus import Frame

    column_width = (width - 2 * _MARGIN - (columns - 1) * gap) / columns
    for i in range(columns):
        frame = Frame(
            _MARGIN + i * (column_width + gap),
            bottom,
            column_width,
            top - bottom,
            leftPadding=0,
            rightPadding=0,
            topPadding=0,
            bottomPadding=0,
            showBoundary=0,
        )
        if column_figure and i == 1:
            _column_figure(page, frame, styles, rng)
        _fill_frame(page, frame, story, styles["body"])


def _column_figure(page: _Canvas, frame: Any, styles: dict, rng: random.Random) -> None:
    from reportlab.platypus import Image as FlowImage
    from reportlab.platypus import Paragraph

    lang_zh = styles["body"].wordWrap == "CJK"
    caption = (
        "图A：栏内的小图，图注紧跟其后。" if lang_zh else "Figure A: a small chart inside a column, caption below."
    )
    png = io.BytesIO()
    _chart(rng, 400, 260).save(png, format="PNG")
    png.seek(0)
    image = FlowImage(png, width=frame._width, height=frame._width * 0.65)
    frame.add(image, page.canvas)
    if frame.add(Paragraph(_escape(caption), styles["caption"]), page.canvas):
        page.placed.append(caption)


def _fill_frame(page: _Canvas, frame: Any, story: list[str], style: Any) -> None:
    """Whole paragraphs while they fit, then the longest run of words (CJK: characters) that fits."""
    from reportlab.platypus import Paragraph

    while story:
        if frame.add(Paragraph(_escape(story[0]), style), page.canvas):
            page.placed.append(story.pop(0))
            continue
        head, rest = _longest_fitting(story[0], style, frame._width, frame._y - frame._y1p)
        if head and frame.add(Paragraph(_escape(head), style), page.canvas):
            page.placed.append(head)
            story[0] = rest
        return


def _longest_fitting(text: str, style: Any, width: float, height: float) -> tuple[str, str]:
    from reportlab.platypus import Paragraph

    cjk = style.wordWrap == "CJK"
    units = list(text) if cjk else text.split(" ")
    glue = "" if cjk else " "
    low, high = 0, len(units)  # units[:low] fits, units[:high + 1] does not
    while low < high:
        middle = (low + high + 1) // 2
        if Paragraph(_escape(glue.join(units[:middle])), style).wrap(width, height)[1] <= height - 1:
            low = middle
        else:
            high = middle - 1
    return glue.join(units[:low]), glue.join(units[low:])


def _chart(rng: random.Random, width: int, height: int) -> Any:
    """A bar chart without any text (text in the picture is not part of the page's text)."""
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    bars = rng.randint(5, 12)
    step = width / bars
    for i in range(bars):
        h = rng.uniform(0.2, 0.9) * height
        colour = tuple(rng.randint(30, 200) for _ in range(3))
        draw.rectangle((i * step + 4, height - h, (i + 1) * step - 4, height - 2), fill=colour)
    draw.line((0, height - 2, width, height - 2), fill="black", width=3)
    return image


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# ---------------------------------------------------------------------------------------- metric


def normalise(text: str) -> str:
    """One space between words, none next to CJK characters (those are written without spaces)."""
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(rf"(?<=[{CJK}]) | (?=[{CJK}])", "", text)


def similarity(extracted: str, truth: str) -> float:
    from rapidfuzz.distance import Levenshtein

    return Levenshtein.normalized_similarity(normalise(extracted), normalise(truth))


def scan_copy(pdf_path: Path, out_path: Path, dpi: int = 200) -> Path:
    """The same pages as images only: what a scanner makes of them."""
    pdf = pdfium.PdfDocument(str(pdf_path))
    try:
        images = []
        for index in range(len(pdf)):
            bitmap = pdf[index].render(scale=dpi / 72.0)
            images.append(bitmap.to_pil().convert("L").convert("RGB"))
            bitmap.close()
    finally:
        pdf.close()
    images[0].save(out_path, "PDF", resolution=float(dpi), save_all=True, append_images=images[1:])
    return out_path


# ------------------------------------------------------------------------------------------- run


def require_reportlab() -> None:
    """The pages are laid out with reportlab, a development requirement (requirements-dev.txt)."""
    if importlib.util.find_spec("reportlab") is None:
        raise DocLensError("bench-layout lays its pages out with reportlab: pip install -r requirements-dev.txt")


def run_layout_bench(
    settings, docs: dict[str, Path], scanned: bool = True, workdir: Optional[Path] = None
) -> dict[str, Any]:
    """Per-page similarity, native and scanned, for each language whose bench documents are given."""
    from backend.documents.pdf import parse_pdf

    require_reportlab()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="doclens-layout-") as tmp:
        folder = workdir or Path(tmp)
        for lang, source in docs.items():
            pdf_path = folder / f"layout_{lang}.pdf"
            pages = write_bench_pdf(pdf_path, source_paragraphs(source, lang), lang)
            variants = [("native", pdf_path)] + (
                [("scanned", scan_copy(pdf_path, folder / f"scan_{lang}.pdf"))] if scanned else []
            )
            for kind, path in variants:
                started = time.perf_counter()
                parsed = parse_pdf(path, settings)
                seconds = (time.perf_counter() - started) / max(1, len(parsed))
                for bench_page, page in zip(pages, parsed):
                    rows.append(
                        {
                            "lang": lang,
                            "kind": kind,
                            "page": page.page,
                            "columns": bench_page.columns,
                            "similarity": round(similarity(page.text, bench_page.truth), 4),
                            "seconds_per_page": round(seconds, 3),
                        }
                    )
    return {"rows": rows, **_summary(rows)}


def _summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("native", "scanned"):
        values = [r["similarity"] for r in rows if r["kind"] == kind]
        if values:
            out[f"{kind}_mean"] = round(sum(values) / len(values), 4)
            out[f"{kind}_min"] = round(min(values), 4)
    return out


def format_report(report: dict[str, Any]) -> str:
    """The per-page rows as a table (layout bench), then the figures, one a line."""
    lines = (
        [f"{'lang':5} {'kind':8} {'page':>4} {'cols':>4} {'similarity':>10} {'s/page':>7}"] if "rows" in report else []
    )
    lines += [
        f"{r['lang']:5} {r['kind']:8} {r['page']:>4} {r['columns']:>4} {r['similarity']:>10.4f} "
        f"{r['seconds_per_page']:>7.3f}"
        for r in report.get("rows", [])
    ]
    return "\n".join([*lines, format_figures({k: v for k, v in report.items() if k != "rows"})])
