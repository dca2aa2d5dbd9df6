"""Display formulas of a text-layer page written as LaTeX: the lines of one formula (a fraction's
numerator and denominator are lines of their own) gathered, their glyphs read by geometry, and the lines
replaced by one "$$ … $$" line (its equation number after it).
"""

from __future__ import annotations

import re
from typing import Sequence

from backend.documents.equations import URL, body_size
from backend.documents.footnotes import starts_footnote
from backend.documents.formulas.geometry import bar_of, formula_latex, is_rule
from backend.documents.layout import CJK_CHAR, BBox, Char, TextLine, union
from backend.stage_times import stage

_ACCENTS = "˜ˆ¯˙"
_MAX_FORMULA_CHARS = 200  # a longer run of lines is text, whatever it was marked
_NUMBER = re.compile(r"^\(\s*(?:[A-Z]\.)?\d+(?:\.\d+)*[a-z]?\s*\)$")
_STACK_CHARS = 40
_WORDS = re.compile(r"[A-Za-z]{4,}")
_MAX_WORDS = 5  # more words of four letters than this in one line: prose
_MAX_GROUP_WORDS = 8  # ... or in all the lines of one formula: lines of prose caught around an inline fraction


def page_rules(paths: Sequence[tuple[BBox, int]], size: float) -> list[BBox]:
    """The page's thin horizontal bars: fraction and radical rules (and underlines, table lines)."""
    return [box for box, _ in paths if is_rule(box, size)]


def mark_fraction_lines(lines: Sequence[TextLine], rules: Sequence[BBox], size: float) -> None:
    """A bar with short text right above and right below it, both within its span, is a fraction: the
    lines it touches are a display formula even when words stand in it ("Ending Value"). A footnote's rule
    (a footnote in smaller type right under it) is none."""
    text_lines = [
        ln
        for ln in lines
        if not ln.block and ln.chars and len(CJK_CHAR.findall(ln.text)) <= 2 and not URL.search(ln.text)
    ]  # a link under a footnote's rule is no denominator
    for rule in rules:
        touching = [ln for ln in text_lines if _touches(ln, rule)]
        if _radical_bar(rule, touching) or any(_footnote_under(ln, rule, size) for ln in touching):
            continue
        above = any(_stacked_side(ln, rule, up=True) for ln in touching)
        below = any(_stacked_side(ln, rule, up=False) for ln in touching)
        if above and below:
            for line in touching + [ln for ln in text_lines if _beside(ln, rule)]:
                line.equation = True


def _touches(line: TextLine, rule: BBox) -> bool:
    reach = 1.6 * max(line.size, 1.0)
    return line.x0 < rule[2] and line.x1 > rule[0] and line.y0 - reach < rule[1] and line.y1 + reach > rule[3]


def _beside(line: TextLine, rule: BBox) -> bool:
    """On the bar's row and near it: the rest of the formula the fraction stands in."""
    size = max(line.size, 1.0)
    near = rule[0] - 3 * size < line.x1 and line.x0 < rule[2] + 3 * size
    return near and line.y0 <= rule[1] <= line.y1 and len(line.text) <= _MAX_FORMULA_CHARS


def _stacked_side(line: TextLine, rule: BBox, up: bool) -> bool:
    """The line's chars on one side of the bar and close to it lie mostly within its span, and are few (a
    numerator, not a line of text above a radical's bar)."""
    size = max(line.size, 1.0)
    side = [
        c
        for c in line.chars
        if not c.text.isspace()
        and (c.box[1] >= rule[1] - 0.3 if up else c.box[3] <= rule[3] + 0.3)
        and abs((c.box[1] + c.box[3]) / 2 - (rule[1] + rule[3]) / 2) < 1.6 * size
    ]
    spanned = [c for c in side if rule[0] - 1 <= (c.box[0] + c.box[2]) / 2 <= rule[2] + 1]
    return 0 < len(spanned) <= _STACK_CHARS and len(spanned) >= 0.3 * len(side)


def _footnote_under(line: TextLine, rule: BBox, size: float) -> bool:
    return line.y1 <= rule[3] + 0.5 and starts_footnote(line, size)


def _radical_bar(rule: BBox, lines: Sequence[TextLine]) -> bool:
    return any(bar_of(c, rule) for ln in lines for c in ln.chars if c.text == "√")


def latex_formulas(lines: Sequence[TextLine], rules: Sequence[BBox]) -> list[TextLine]:
    """The lines with each display formula (runs of ``equation`` lines close above each other) written as
    one LaTeX line. Formulas read by OCR (no glyphs) stay as they are."""
    out: list[TextLine] = []
    for group in _formula_groups(lines):
        chars = [c for ln in group for c in ln.chars]
        if not group[0].equation or not _readable(group, chars):  # (a line of text is a group of one)
            out.extend(group)
            continue
        box = union(ln.box for ln in group)
        body, number = _split_number(chars)
        inside = [r for r in rules if _within(r, box)]
        latex = formula_latex(body, inside)
        text = f"$$ {latex} $$" + (f" {number}" if number else "")
        line = TextLine(text, box, max(ln.size for ln in group), chars, column=group[0].column, equation=True)
        out.append(line)
    return out


def _formula_groups(lines: Sequence[TextLine]) -> list[list[TextLine]]:
    """Runs of lines: each non-equation line alone; equation lines joined to a formula of the same run of
    equation lines that they stand close to (reading order may put a formula's parts apart)."""
    groups: list[list[TextLine]] = []
    run: list[list[TextLine]] = []  # the formulas of the current run of equation lines
    for line in lines:
        if not line.equation:
            groups.append([line])
            run = []
            continue
        homes = [g for g in run if _close(g, line) or _number_of(g, line)]
        if homes:  # a line that bridges two parts of the run joins them
            homes[0].extend([ln for g in homes[1:] for ln in g] + [line])
            run = [g for g in run if not any(g is h for h in homes[1:])]
            groups = [g for g in groups if not any(g is h for h in homes[1:])]
        else:
            run.append([line])
            groups.append(run[-1])
    return groups


def _number_of(group: Sequence[TextLine], line: TextLine) -> bool:
    """An equation number on the formula's row, far right of it."""
    box = union(ln.box for ln in group)
    return bool(_NUMBER.match(line.text.strip())) and line.y0 < box[3] and line.y1 > box[1] and line.x0 > box[2]


def _close(group: Sequence[TextLine], line: TextLine) -> bool:
    """The line stands right above or below the group (a fraction's parts, a formula's rows)."""
    box = union(ln.box for ln in group)
    gap = max(line.y0 - box[3], box[1] - line.y1)
    size = max([line.size, 1.0] + [ln.size for ln in group])
    beside = line.x0 < box[2] + 5 * size and line.x1 > box[0] - 5 * size  # not a stamp in the margin
    return gap < 0.6 * size and beside  # (the column test may cut a formula into columns: not asked)


def _readable(group: Sequence[TextLine], chars: Sequence[Char]) -> bool:
    """Glyphs of the text layer, one char each (an OCR'd formula has none, or one string), few enough."""
    visible = [c for c in chars if not c.text.isspace()]
    words = [len(_WORDS.findall(ln.text)) for ln in group]
    if max(words) > _MAX_WORDS or sum(words) > _MAX_GROUP_WORDS:
        return False  # a line of prose that happened to stand by a formula
    return (
        bool(visible)
        and all(ln.chars and not ln.block for ln in group)
        and all(len(c.text) == 1 for c in visible)
        and len(visible) <= _MAX_FORMULA_CHARS
        and len(CJK_CHAR.findall("".join(c.text for c in visible))) <= 2
    )


def _split_number(chars: Sequence[Char]) -> tuple[list[Char], str]:
    """The formula's glyphs and its equation number: "(1)" set apart at the right end of the formula."""
    solid = sorted((c for c in chars if not c.text.isspace()), key=lambda c: c.box[0])
    for start in range(len(solid) - 1, max(-1, len(solid) - 9), -1):
        tail = "".join(c.text for c in solid[start:])
        size = max(solid[start].size, 1.0)
        if _NUMBER.match(tail) and start > 0 and solid[start].box[0] - solid[start - 1].box[2] > 2 * size:
            return solid[:start], tail
    return solid, ""


def _within(rule: BBox, box: BBox) -> bool:
    return rule[0] >= box[0] - 2 and rule[2] <= box[2] + 2 and box[1] - 2 <= rule[1] <= box[3] + 2


@stage("formulas")
def formulas_as_latex(lines: Sequence[TextLine], paths: Sequence[tuple[BBox, int]]) -> list[TextLine]:
    """The page's lines (``equation`` already marked) with fractions found by their bars and every display
    formula of the text layer written as LaTeX."""
    size = body_size(lines)
    rules = page_rules(paths, size)
    mark_fraction_lines(lines, rules, size)
    return [line for line in latex_formulas(lines, rules) if not _accents_only(line.text)]


def _accents_only(text: str) -> bool:
    """A wide tilde or hat of TeX's that stands on a row of its own above its letter and joined no formula:
    it says nothing on its own (a "$$ ˜ $$" of its own)."""
    return bool(text.strip()) and not text.strip(_ACCENTS + "$ ")
