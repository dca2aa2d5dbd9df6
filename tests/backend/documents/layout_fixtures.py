"""Small real PDFs (reportlab, pypdfium2) that reproduce what real papers did to the parser."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Sequence

import pypdfium2 as pdfium
from PIL import Image

DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf"
DEJAVU_MONO = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
DEJAVU_MATH = "/usr/share/fonts/truetype/dejavu/DejaVuMathTeXGyre.ttf"


def _font(name: str, path: str) -> str:
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

    if name not in pdfmetrics.getRegisteredFontNames():
        pdfmetrics.registerFont(TTFont(name, path))
    return name


def _png(colour: str, size=(300, 200)) -> io.BytesIO:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="PNG")
    buffer.seek(0)
    return buffer


def write_bleeding_figures_pdf(path: Path) -> Path:
    """A page with a CropBox inside the MediaBox: one figure bleeds past the CropBox, one lies almost
    entirely in the cut-off margin (what arXiv 1506.05865 and 2312.07556 do), one sits inside."""
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen.canvas import Canvas

    canvas = Canvas(str(path), pagesize=(612, 792))
    canvas.setCropBox((36, 36, 576, 756))
    canvas.setFont(_font("dejavu", DEJAVU), 10)
    canvas.drawString(72, 700, "A page whose figures bleed past the visible page box.")
    canvas.drawImage(ImageReader(_png("red")), 300, 400, 400, 200)  # right part outside the CropBox
    canvas.drawImage(ImageReader(_png("green")), 560, 100, 140, 120)  # only 16 pt of it visible
    canvas.drawImage(ImageReader(_png("blue")), 72, 150, 200, 150)  # fully visible
    canvas.save()
    return path


def write_offset_mediabox_pdf(path: Path) -> Path:
    """A page whose MediaBox starts at (100, 100), with one solid red figure on it."""
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen.canvas import Canvas

    canvas = Canvas(str(path), pagesize=(712, 892))
    canvas.setFont(_font("dejavu", DEJAVU), 10)
    canvas.drawString(172, 800, "The page box of this page does not start at the origin.")
    canvas.drawImage(ImageReader(_png("red")), 400, 300, 240, 160)
    canvas.save()
    pdf = pdfium.PdfDocument(str(path))
    pdf[0].set_mediabox(100, 100, 712, 892)
    pdf.save(str(path) + ".tmp")
    pdf.close()
    Path(str(path) + ".tmp").replace(path)
    return path


def write_lines_pdf(path: Path, lines: Sequence[str], font: str = DEJAVU, size: float = 10, width: float = 325) -> Path:
    """Lines set as one text object (as TeX does): pdfium may run them together."""
    from reportlab.pdfgen.canvas import Canvas

    canvas = Canvas(str(path), pagesize=(width, 300), pageCompression=0)
    text = canvas.beginText(30, 260)
    text.setFont(_font(Path(font).stem, font), size)
    for line in lines:
        text.textLine(line)
    canvas.drawText(text)
    canvas.save()
    return path


def fix_astral_to_unicode(path: Path) -> Path:
    """reportlab writes astral code points into ToUnicode as 5 hex digits; real TeX PDFs map them to
    UTF-16 surrogate pairs, which pdfium hands out one half per char index. Rewrite the map that way,
    at the same byte length (unused entries dropped, spaces added) so the xref stays right."""
    data = path.read_bytes()
    start = data.index(b"beginbfchar")
    end = data.index(b"endbfchar", start)
    lines = []
    for entry in data[start:end].split(b"\n"):
        parts = entry.split(b" ")
        if len(parts) == 2 and len(parts[1]) == 7:  # <1D70E>
            code = int(parts[1][1:-1], 16) - 0x10000
            entry = parts[0] + b" <%04X%04X>" % (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF))
        lines.append(entry)
    while len(b"\n".join(lines)) > end - start:
        unused = max(i for i, line in enumerate(lines) if line.endswith(b"<0000>"))
        del lines[unused]
    body = b"\n".join(lines)
    count_start = data.rindex(b"\n", 0, start) + 1
    count = b"%d " % (len(lines) - 2)  # the first and last split pieces are no entries
    head = data[:count_start] + count.rjust(start - count_start)
    path.write_bytes(head + body + b" " * (end - start - len(body)) + data[end:])
    return path


def write_placed_lines_pdf(
    path: Path,
    pages: Sequence[Sequence[tuple[float, str, float]]],
    font: str = DEJAVU,
    width: float = 420,
    height: float = 595,
) -> Path:
    """Pages of lines (x, text, font size), each line 1.4 sizes below the previous; x < 0 centres it."""
    from reportlab.pdfgen.canvas import Canvas

    name = _font(Path(font).stem, font)
    canvas = Canvas(str(path), pagesize=(width, height))
    for lines in pages:
        y = height - 60
        for x, text, size in lines:
            canvas.setFont(name, size)
            if x < 0:
                canvas.drawCentredString(width / 2, y, text)
            else:
                canvas.drawString(x, y, text)
            y -= 1.4 * size + (6 if size > 11 else 0)
        canvas.showPage()
    canvas.save()
    return path


def write_drawn_chart_pdf(path: Path, paragraphs: Sequence[str]) -> str:
    """Two columns of text above and below a chart as wide as the page drawn with vector paths (no image
    object), its tick labels real text. Returns the true text of the columns and the caption, in order."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.pdfgen.canvas import Canvas
    from reportlab.platypus import Frame, Paragraph

    name = _font("DejaVuSerif", DEJAVU)
    canvas = Canvas(str(path), pagesize=A4)
    width = A4[0]
    body = ParagraphStyle("body", fontName=name, fontSize=10, leading=13)
    story, truth = list(paragraphs), []

    def columns(top: float, bottom: float) -> None:
        column_width = (width - 108 - 18) / 2
        for i in range(2):
            frame = Frame(
                54 + i * (column_width + 18),
                bottom,
                column_width,
                top - bottom,
                leftPadding=0,
                rightPadding=0,
                topPadding=0,
                bottomPadding=0,
            )
            while story and frame.add(Paragraph(story[0], body), canvas):
                truth.append(story.pop(0))

    columns(755, 520)
    x0, x1, y0, y1 = 80, width - 60, 330, 490
    canvas.setLineWidth(0.8)
    canvas.line(x0, y0, x1, y0)
    canvas.line(x0, y0, x0, y1)
    points = [(x0 + i * (x1 - x0) / 20, y0 + 10 + ((i * 37) % 19) * (y1 - y0 - 20) / 19) for i in range(21)]
    for (a, b), (c, d) in zip(points, points[1:]):
        canvas.line(a, b, c, d)
    canvas.setFont(name, 8)
    for i in range(11):
        x = x0 + i * (x1 - x0) / 10
        canvas.line(x, y0, x, y0 - 3)
        canvas.drawCentredString(x, y0 - 12, str(i * 10))
    for i in range(5):
        canvas.drawRightString(x0 - 4, y0 + i * (y1 - y0) / 4 - 3, str(i * 25))
    caption = "Figure 1: accuracy over training steps, drawn as vector paths with text tick labels."
    canvas.setFont(name, 9)
    canvas.drawString(54, 300, caption)
    truth.append(caption)
    columns(285, 54)
    canvas.showPage()
    canvas.save()
    return " ".join(truth)


def write_word_plot_pdf(path: Path, words: int, seed: int = 7) -> tuple[list[str], set[str]]:
    """Body text above and below a plot box scattered with ``words`` separate tiny words (a t-SNE map of a
    vocabulary: one text object per word) and its caption. Returns the body lines and the plot's vocabulary."""
    import random

    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen.canvas import Canvas

    name = _font("DejaVuSerif", DEJAVU)
    canvas = Canvas(str(path), pagesize=A4)
    width, height = A4
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocabulary = sorted({"".join(rng.choice(letters) for _ in range(rng.randint(4, 7))) for _ in range(3000)})
    above = [f"Body sentence {i} explains the word embedding experiment in plain prose." for i in range(11)]
    above.append("The figure below maps every word of the vocabulary.")
    below = [f"After the figure, sentence {i} goes on about the clusters." for i in range(6)]
    y = height - 60
    canvas.setFont(name, 10)
    for line in above:
        canvas.drawString(54, y, line)
        y -= 13
    x0, y0, x1, y1 = 70, 200, width - 50, y - 20
    canvas.line(x0, y0, x1, y0)
    canvas.line(x0, y0, x0, y1)
    for _ in range(words):
        canvas.setFont(name, rng.uniform(1.5, 3.5))
        canvas.drawString(rng.uniform(x0 + 2, x1 - 12), rng.uniform(y0 + 2, y1 - 4), rng.choice(vocabulary))
    caption = "Figure 3: a t-SNE map of the vocabulary, one word per point."
    canvas.setFont(name, 9)
    canvas.drawString(54, 180, caption)
    canvas.setFont(name, 10)
    y = 160
    for line in below:
        canvas.drawString(54, y, line)
        y -= 13
    canvas.showPage()
    canvas.save()
    return [*above, caption, *below], set(vocabulary)


def write_cell_table_pdf(path: Path, rows: int = 40, columns: int = 8, size: float = 7) -> list[str]:
    """A table of short numbers written cell by cell, column after column (one text object per cell):
    short separate lines, but on shared baselines. Returns the cells."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen.canvas import Canvas

    name = _font("DejaVuSerif", DEJAVU)
    canvas = Canvas(str(path), pagesize=A4)
    canvas.setFont(name, size)
    cells = []
    for column in range(columns):
        for row in range(rows):
            cell = f"{(row * 37 + column * 11) % 997}.{column}"
            canvas.drawString(40 + column * size * 7, 800 - row * size * 1.3, cell)
            cells.append(cell)
    canvas.showPage()
    canvas.save()
    return cells


def write_numbered_lines_pdf(path: Path, left: Sequence[str], right: Sequence[str], every: int = 1) -> Path:
    """A two-column page of a review copy: every line (or every ``every``-th) numbered in small type in the
    margin beside its column, the left column's numbers first, then the right's."""
    from reportlab.pdfgen.canvas import Canvas

    name = _font("DejaVuSerif", DEJAVU)
    canvas = Canvas(str(path), pagesize=(612, 792))
    number = 1
    for column, x, margin in ((left, 60, 52), (right, 320, 560)):
        y = 720.0
        for text in column:
            canvas.setFont(name, 10)
            canvas.drawString(x, y, text)
            if number % every == 0:
                canvas.setFont(name, 6)
                draw = canvas.drawRightString if margin < x else canvas.drawString
                draw(margin, y, str(number))
            number += 1
            y -= 12
    canvas.showPage()
    canvas.save()
    return path
