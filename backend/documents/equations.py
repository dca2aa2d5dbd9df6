"""Display equations: found from their text and position, kept whole, and formulas drawn as vector paths
(no text layer at all) OCR'd so their symbols can be searched.

A display equation line is set apart from the running text (indented or centred, or numbered like
"(1.1)") and is made of symbols, not words. Its lines are joined into one paragraph, which the chunker
keeps as one unit (``is_equation_text`` decides the same from the text alone).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from backend.documents.layout import CJK_CHAR, BBox, Char, TextLine, center_inside, line_from_chars, union
from backend.documents.paragraphs import body_text_lines, column_edges

log = logging.getLogger(__name__)

_MATH_CHARS = (
    set("=<>≤≥≈≠≡∼∝∑∏∫∮√∂∇±∓×÷·∘→←↔⇒⇔∈∉∋⊂⊃⊆⊇∪∩∧∨¬∀∃∞^_|/+−∗′″ˆ˜¯")
    | {chr(c) for c in range(0x391, 0x3CA)}
    | {chr(c) for c in range(0x2200, 0x2300)}
)
_EQUATION_NUMBER = re.compile(r"\(\s*(?:[A-Z]\.)?\d+(?:\.\d+)*[a-z]?\s*\)\s*$")
# The same standing as a word of its own anywhere: OCR reads a fraction row by row, and the number, on the
# numerator's row, comes before the denominator ("… V (1) √dk").
_EQUATION_NUMBER_WORD = re.compile(r"(?:^|\s)(\(\s*(?:[A-Z]\.)?\d+(?:\.\d+)*[a-z]?\s*\))(?=\s|$)")
_WORD = re.compile(r"[A-Za-z]{4,}")
_MATH_WORDS = {
    "sinh",
    "cosh",
    "tanh",
    "argmax",
    "argmin",
    "softmax",
    "diag",
    "trace",
    "sign",
    "otherwise",
    "where",
    "with",
    "subject",
    "s.t.",
    "exp",
    "log",
    "max",
    "min",
}
_MAX_EQUATION_CHARS = 160
URL = re.compile(r"https?://|www\.", re.IGNORECASE)  # a footnote's link: its ":", "/" and "." are no math
_FRACTION_HEIGHT = 1.7  # an OCR line this many times the page's usual line height holds stacked parts
# vector-drawn formulas: glyph outlines as small paths
_GLYPH_MAX = 3.0  # a path at most this many body font sizes wide and high is a glyph
_MIN_GLYPHS = 3
# symbols drawn as paths inside a text line ("其中 m 是粒子质量", a table cell "0.5ℏω")
_INLINE_GLYPH_MAX = 1.6  # at most this many body font sizes wide and high
_MAX_GLYPH_ASPECT = 12.0  # thinner paths are rules, ticks and underlines
_MAX_PAGE_GLYPHS = 400  # more small paths than this on a page: a drawing, not text
FORMULA_IMAGE_MARK = "[formula image "  # a formula only drawn (no text): its image's key, then its OCR reading
_RELATION = re.compile(r"[=<>≤≥≈≠≡∼∝∑∏∫√±×÷→⇒∈⊂]")  # what a scanned paragraph needs to be taken for a formula
MAX_MARKED_OCR = 400  # answering.formula_images finds a mark up to this long reading
FORMULA_KEY = re.compile(r"p\d{1,5}_eq\d{1,3}")  # the image's name beside the figures: p{page}_eq{n}
# The mark as ``formula_mark`` writes it, found again strictly (a PDF's own text could imitate it): its key
# and its OCR reading. The one pattern for the vision model's reading and the page's wording alike.
FORMULA_IMAGE = re.compile(
    re.escape(FORMULA_IMAGE_MARK)
    + f"(?P<key>{FORMULA_KEY.pattern})(?:, OCR: (?P<ocr>[^\\]\\n]{{0,{MAX_MARKED_OCR}}}))?\\]"
)
MAX_INLINE_FORMULAS = 24  # more clusters than this on a page: a drawing, not symbols in text


def math_share(text: str) -> float:
    solid = [c for c in text if not c.isspace()]
    return sum(1 for c in solid if c in _MATH_CHARS) / len(solid) if solid else 0.0


def _long_words(text: str) -> int:
    return sum(1 for w in _WORD.findall(text) if w.lower() not in _MATH_WORDS)


def is_equation_line(line: TextLine, left_edge: float, right_edge: float) -> bool:
    """A display equation line: symbols with at most one word, set apart from the column's margins or
    carrying an equation number."""
    text = line.text.strip()
    if line.block or not text or len(text) > _MAX_EQUATION_CHARS or len(CJK_CHAR.findall(text)) > 2:
        return False
    if URL.search(text):
        return False
    numbered = bool(_EQUATION_NUMBER.search(text))
    if math_share(text) == 0 or _long_words(text) > (1 if numbered else 0):
        return False
    size = max(line.size, 1.0)
    set_apart = line.x0 > left_edge + 2.0 * size and (right_edge - line.x1 > 2.0 * size or numbered)
    return numbered or set_apart


def mark_equations(lines: Sequence[TextLine], page_width: float) -> None:
    """Set ``equation`` on display equation lines, and on the short pieces of a fraction or a sum's limits
    right before or after one."""
    text_lines = body_text_lines(lines)  # a turned run (a figure's label, arXiv's stamp) is never an equation
    if not text_lines:
        return
    edges = column_edges(text_lines, page_width)
    for line in text_lines:
        line.equation = is_equation_line(line, *edges[line.column])
    for i, line in enumerate(lines):
        neighbours = [lines[j] for j in (i - 1, i + 1) if 0 <= j < len(lines)]
        if line.block or line.turned or line.column not in edges:
            continue  # a table or a figure's labels: never part of an equation
        if not line.equation and _is_fragment(line, edges[line.column][0]) and any(n.equation for n in neighbours):
            line.equation = True


def _is_fragment(line: TextLine, left_edge: float) -> bool:
    text = line.text.strip()
    return (
        not line.block
        and 0 < len(text) <= 12
        and _long_words(text) == 0
        and line.x0 > left_edge + 2.0 * max(line.size, 1.0)
    )


def is_equation_text(paragraph: str) -> bool:
    """The same test on a paragraph of text (the chunker has no geometry): short, symbol-rich, wordless."""
    text = " ".join(paragraph.split())
    if not text or len(text) > 2 * _MAX_EQUATION_CHARS or len(CJK_CHAR.findall(text)) > 2:
        return False
    numbered = bool(_EQUATION_NUMBER.search(text))
    share = math_share(text)
    words = _long_words(text)
    return share > 0 and (numbered and words <= 2 or share >= 0.08 and words == 0)


def body_line_height(lines: Sequence[TextLine]) -> float:
    """The median height of the page's prose lines (no relation sign), which formulas do not skew on a page
    of few lines; the median of all lines when there is no prose."""
    prose = sorted(ln.y1 - ln.y0 for ln in lines if len(ln.text) >= 8 and not _RELATION.search(ln.text))
    heights = prose or sorted(ln.y1 - ln.y0 for ln in lines)
    return heights[len(heights) // 2] if heights else 0.0


def is_fraction_display(paragraph: str, lines: Sequence[TextLine], line_height: float) -> bool:
    """A scanned paragraph holding a display fraction: OCR's detector boxes a fraction with its numerator
    and denominator as one line about twice as tall as the prose lines (``line_height``, see
    ``body_line_height``): "CAGR=(Ending Value/Beginning Value-)1/n-1", with a relation sign in it. Such
    a formula may hold words, which ``is_equation_text`` takes for prose."""
    text = " ".join(paragraph.split())
    if len(text) > _MAX_EQUATION_CHARS or len(CJK_CHAR.findall(text)) > 2:
        return False
    return any(
        ln.y1 - ln.y0 >= _FRACTION_HEIGHT * line_height and _RELATION.search(ln.text) is not None for ln in lines
    )


# ------------------------------------------------------------------------ formulas drawn as paths


def formula_regions(
    paths: Sequence[tuple[BBox, int]], lines: Sequence[TextLine], excluded: Sequence[BBox], body_size: float
) -> list[BBox]:
    """Boxes of display formulas drawn as glyph outlines: clusters of small paths on rows of their own
    (no text line beside them), outside tables and figures."""
    limit = _GLYPH_MAX * max(body_size, 1.0)
    glyphs = [
        b
        for b, _ in paths
        if 0 < b[2] - b[0] <= limit
        and 0 < b[3] - b[1] <= limit
        and not any(center_inside(b, area, pad=1.0) for area in excluded)
        and not any(center_inside(b, ln.box, pad=0.5) for ln in lines)
    ]
    # a formula's number may be text while the formula is drawn: it does not make the row a text row
    words = [ln for ln in lines if not _EQUATION_NUMBER.fullmatch(ln.text.strip())]
    regions = []
    for cluster in _clusters(glyphs, gap=0.8 * max(body_size, 1.0)):
        box = union(cluster)
        if len(cluster) >= _MIN_GLYPHS and not any(_same_rows(box, ln.box) for ln in words):
            regions.append(box)
    return regions


def with_numbers_attached(lines: Sequence[TextLine], formulas: Sequence[TextLine]) -> list[TextLine]:
    """The lines with a text equation number on a drawn formula's row put after that formula ("… (1)"),
    not left to start the next paragraph."""
    out = list(lines)
    for formula in formulas:
        number = next(
            (ln for ln in out if _EQUATION_NUMBER.fullmatch(ln.text.strip()) and _same_rows(formula.box, ln.box)), None
        )
        if number is not None and number is not formula:
            formula.text = f"{formula.text} {number.text.strip()}"
            out.remove(number)
    return out


def _clusters(boxes: Sequence[BBox], gap: float) -> list[list[BBox]]:
    groups: list[list[BBox]] = []
    for box in sorted(boxes, key=lambda b: (-b[3], b[0])):
        near = [g for g in groups if any(_near(box, other, gap) for other in g[-40:])]
        merged = [box] + [b for g in near for b in g]
        groups = [g for g in groups if not any(g is n for n in near)] + [merged]
    return groups


def _near(a: BBox, b: BBox, gap: float) -> bool:
    return a[0] - gap <= b[2] and b[0] - gap <= a[2] and a[1] - gap <= b[3] and b[1] - gap <= a[3]


def _same_rows(a: BBox, b: BBox) -> bool:
    return min(a[3], b[3]) - max(a[1], b[1]) > 0.5 * min(a[3] - a[1], b[3] - b[1])


@dataclass
class DrawnFormula:
    """A display formula without text to read it from (drawn as glyph outlines, or scanned), as an image:
    kept beside the document's figures for the vision model to read (``answering.formula_images``)."""

    page: int
    index: int  # 1-based on its page
    image: Any  # a PIL image

    @property
    def key(self) -> str:
        return f"p{self.page}_eq{self.index}"

    @property
    def file_name(self) -> str:
        return f"{self.key}.png"


def save_formulas(formulas: Sequence[DrawnFormula], directory: Path) -> None:
    """Each as ``p{page}_eq{n}.png`` beside the document's figures; one that cannot be written is left out
    (its passage keeps the OCR reading)."""
    for formula in formulas:
        try:
            directory.mkdir(parents=True, exist_ok=True)
            formula.image.save(directory / formula.file_name, format="PNG")
        except (OSError, ValueError) as exc:
            log.warning("formula image %s not saved: %s", formula.file_name, exc)


class ScannedFormulas:
    """A scanned page's display equations: each paragraph OCR reads as one (``ocr.page_text``'s ``mark``)
    is cut out of the page image and marked as a drawn formula is, its equation number left outside."""

    def __init__(self, page: int, image: Any):
        self.page = page
        self.image = image
        self.found: list[DrawnFormula] = []

    def mark(self, text: str, box: tuple[float, float, float, float]) -> str:
        numbers = list(_EQUATION_NUMBER_WORD.finditer(text))
        number = numbers[-1] if numbers else None
        reading = " ".join((text[: number.start()] + text[number.end() :]).split()) if number else text
        if not _RELATION.search(reading):  # "2001/10/12", "a/b": no formula to read
            return text
        pad = 0.3 * (box[3] - box[1])
        width, height = self.image.size
        crop = (max(0, box[0] - pad), max(0, box[1] - pad), min(width, box[2] + pad), min(height, box[3] + pad))
        self.found.append(DrawnFormula(self.page, len(self.found) + 1, self.image.crop(tuple(round(v) for v in crop))))
        marked = formula_mark(self.found[-1].key, reading)
        return f"{marked} {number.group(1).strip()}" if number else marked


def formula_mark(key: str, ocr: str) -> str:
    """What the text holds for a drawn formula: OCR garbles formulas, so its reading is marked as such (no
    brackets inside, at most MAX_MARKED_OCR characters: the mark is found again by its closing bracket)."""
    reading = " ".join(ocr.replace("[", "(").replace("]", ")").split())[:MAX_MARKED_OCR]
    return f"{FORMULA_IMAGE_MARK}{key}, OCR: {reading}]" if reading else f"{FORMULA_IMAGE_MARK}{key}]"


def ocr_formulas(
    regions: Sequence[BBox], render: Callable[[BBox], Any], recognize: Callable[[Any], str], size: float, page: int
) -> tuple[list[TextLine], list[DrawnFormula]]:
    """Each formula region rendered and read by OCR, as a line placed where the formula is, and its image."""
    found: list[TextLine] = []
    drawn: list[DrawnFormula] = []
    for box in regions:
        image, text = _render_and_read(box, render, recognize, size)
        # a number alone is the formula's number; nothing or one sign read (a figure's marks, a proof's
        # "□"): no formula
        if image is not None and _reads_as_formula(text):
            drawn.append(DrawnFormula(page, len(drawn) + 1, image))
            text = formula_mark(drawn[-1].key, text)
        if text:
            found.append(TextLine(text, box, size))
    return found, drawn


def _reads_as_formula(text: str) -> bool:
    return not _EQUATION_NUMBER.fullmatch(text) and sum(c.isalnum() or c in _MATH_CHARS for c in text) >= 2


def _render_and_read(
    box: BBox, render: Callable[[BBox], Any], recognize: Callable[[Any], str], size: float
) -> tuple[Optional[Any], str]:
    try:
        image = render(_padded(box, size))
    except Exception as exc:  # noqa: BLE001 - one formula is not worth the page
        log.warning("formula at %s not rendered (%s)", [round(v) for v in box], exc)
        return None, ""
    try:
        return image, " ".join(recognize(image).split())
    except Exception as exc:  # noqa: BLE001 - its image is still kept for the vision model
        log.warning("formula at %s not read (%s)", [round(v) for v in box], exc)
        return image, ""


def _padded(box: BBox, size: float) -> BBox:
    pad = 0.5 * size
    return (box[0] - pad, box[1] - pad, box[2] + pad, box[3] + pad)


def body_size(lines: Sequence[TextLine]) -> float:
    sizes = sorted(ln.size for ln in lines if not ln.block and ln.size > 0)
    return sizes[len(sizes) // 2] if sizes else 10.0


# ------------------------------------------------------------------ symbols drawn as paths in text


def inline_formula_regions(
    paths: Sequence[tuple[BBox, int]], lines: Sequence[TextLine], excluded: Sequence[BBox], body_size: float
) -> list[BBox]:
    """Boxes of symbols drawn as glyph outlines inside text rows: clusters of small paths on the row of a
    text line and close to it, over no char of the text layer, outside figures and images. None on a page
    with so many small paths or clusters that it is a drawing."""
    size = max(body_size, 1.0)
    glyphs = [
        b
        for b, _ in paths
        if _glyph_like(b, _INLINE_GLYPH_MAX * size) and not any(center_inside(b, area, pad=1.0) for area in excluded)
    ]
    if len(glyphs) > _MAX_PAGE_GLYPHS:
        return []
    glyphs = [b for b in glyphs if any(_in_text_row(b, ln, size) for ln in lines if not ln.block)]
    regions = [union(c) for c in _clusters(glyphs, gap=0.6 * size)]
    return regions if len(regions) <= MAX_INLINE_FORMULAS else []


def _glyph_like(box: BBox, limit: float) -> bool:
    width, height = box[2] - box[0], box[3] - box[1]
    return 0 < width <= limit and 0 < height <= limit and max(width, height) <= _MAX_GLYPH_ASPECT * min(width, height)


def _in_text_row(box: BBox, line: TextLine, size: float) -> bool:
    """On the line's row, inside it or within 1.5 font sizes of its ends, and not over one of its chars."""
    cy = (box[1] + box[3]) / 2
    if not line.y0 - 0.3 * size <= cy <= line.y1 + 0.3 * size:
        return False
    if box[2] < line.x0 - 1.5 * size or box[0] > line.x1 + 1.5 * size:
        return False
    return not any(center_inside(box, c.box) for c in line.chars if not c.text.isspace())


def ocr_inline_formulas(
    regions: Sequence[BBox], render: Callable[[BBox], Any], recognize: Callable[[Any], str], size: float
) -> list[TextLine]:
    """Each region rendered without its neighbours (a thin margin only) and read by OCR, as a piece of a
    line placed where the symbols are."""
    found = []
    for box in regions:
        tight = (box[0] - 0.1 * size, box[1] - 0.3 * size, box[2] + 0.1 * size, box[3] + 0.3 * size)
        try:
            text = "".join(recognize(render(tight)).split())
        except Exception as exc:  # noqa: BLE001 - OCR of a few symbols is not worth the page
            log.warning("symbols at %s not read (%s)", [round(v) for v in box], exc)
            continue
        if any(c.isalnum() or c in _MATH_CHARS for c in text):  # a legend's marker reads as "■": no symbol
            found.append(TextLine(text, box, size, [Char(text, box, size)]))
    return found


def with_inline_pieces(lines: Sequence[TextLine], pieces: Sequence[TextLine]) -> list[TextLine]:
    """The lines with each piece set in: into the line that runs across it, between the chars left and
    right of it (the text layer's spaces around the gap stay), or else as a line of its own."""
    out = list(lines)
    for piece in pieces:
        cx, cy = (piece.x0 + piece.x1) / 2, (piece.y0 + piece.y1) / 2
        host = next(
            (i for i, ln in enumerate(out) if not ln.block and ln.x0 < cx < ln.x1 and ln.y0 <= cy <= ln.y1), None
        )
        if host is None:
            out.append(piece)
            continue
        chars = out[host].chars
        at = next((i for i, c in enumerate(chars) if (c.box[0] + c.box[2]) / 2 > cx), len(chars))
        line = line_from_chars(chars[:at] + piece.chars + chars[at:])
        if line is not None:
            line.column, line.equation = out[host].column, out[host].equation
            out[host] = line
    return out
