"""A formula's LaTeX from where its glyphs stand: a smaller glyph raised or lowered beside its base is a
super- or subscript, a horizontal rule with glyphs above and below is a fraction, a radical sign with a
bar is a root over what the bar covers, an accent glyph above a letter is a hat; symbols are named
(ħ → \\hbar, ω → \\omega).
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Optional, Sequence

from backend.documents.formulas.symbols import ACCENT_OF, FUNCTIONS, latex_symbol, needs_space_after
from backend.documents.layout import BBox, Char, union

_SCRIPT_SIZE = 0.85  # glyphs smaller than this share of the row's size are scripts
_RULE_MAX_HEIGHT = 1.6  # points: thicker paths are boxes, not fraction bars
_STACK_REACH = 1.6  # how far above and below a bar, in font sizes, its numerator and denominator stand
_WORD_GAP = 0.2  # a gap wider than this share of the size between letters parts two words
_SCRIPT_GAP = 0.6
_BIG_OPERATORS = set("∑∏∫∮⋃⋂")  # a script stands at most this many sizes right of its base
# Operators written as words whose limits stand below them in display formulas
_LIMIT_WORDS = {
    "lim": "\\lim",
    "inf": "\\inf",
    "sup": "\\sup",
    "max": "\\max",
    "min": "\\min",
    "liminf": "\\liminf",
    "limsup": "\\limsup",
    "argmax": "\\arg\\max",
    "argmin": "\\arg\\min",
}


@dataclass
class _Piece:
    """A glyph, or a part already written as LaTeX (a fraction, a root, an accented letter)."""

    latex: str
    box: BBox
    size: float
    char: str = ""  # the glyph, for a piece that is one

    @property
    def cx(self) -> float:
        return (self.box[0] + self.box[2]) / 2

    @property
    def cy(self) -> float:
        return (self.box[1] + self.box[3]) / 2


def is_rule(box: BBox, size: float) -> bool:
    """A horizontal bar: a fraction's or a radical's."""
    width, height = box[2] - box[0], box[3] - box[1]
    return 0 <= height <= _RULE_MAX_HEIGHT and width >= 0.4 * max(size, 1.0) and width > 4 * height


def bar_of(sign: Char, rule: BBox) -> bool:
    """The rule starts at the radical sign's top right (a fraction inside the root starts there too, lower)."""
    size = max(sign.size, 1.0)
    return abs(sign.box[2] - rule[0]) < 0.6 * size and sign.box[3] - 0.3 * size <= rule[1] <= sign.box[3] + 1.5 * size


def formula_latex(chars: Sequence[Char], rules: Sequence[BBox]) -> str:
    """The LaTeX of one formula from its glyphs and the bars drawn among them."""
    pieces = [_Piece(latex_symbol(c.text), c.box, c.size, c.text) for c in chars if not c.text.isspace()]
    if not pieces:
        return ""
    pieces = _accents_joined(pieces)
    for rule in sorted(rules, key=lambda b: b[2] - b[0]):
        pieces = _radical(pieces, rule) or _fraction(pieces, rule) or pieces
    return " \\\\ ".join(_row(band) for band in _bands(_limits_joined(_limit_words_joined(pieces))))


def _limit_words_joined(pieces: list[_Piece]) -> list[_Piece]:
    """An operator written as a word (lim, inf, sup, max, min) with a smaller line right below it: its limit
    (\\inf_{\\theta\\in\\Theta}). Read left to right with the rest, that line would cut the word in two
    ("in_{\\theta\\in\\Theta}f"), lost to a search for "inf" as much as to a reader."""
    words = _operator_words(pieces)
    for line_words in _by_line(words):
        present = {id(p) for p in pieces}  # a word in a limit of an earlier line was taken with it
        line_words = [w for w in line_words if all(id(p) in present for p in w)]
        if not line_words:
            continue
        size = line_words[0][0].size
        small = [p for p in pieces if p.size < _SCRIPT_SIZE * size]
        seeds = [p for p in small if any(_right_below(p, w) for w in line_words)]
        if not seeds:
            continue
        below = _line_around(seeds, small, size)
        centres = [(w[0].box[0] + w[-1].box[2]) / 2 for w in line_words]
        # "lim inf inf": each glyph goes to the word it stands under
        under = [min(range(len(centres)), key=lambda i: abs(centres[i] - p.cx)) for p in below]
        for k, word in enumerate(line_words):
            own = [p for p, word_at in zip(below, under) if word_at == k]
            if own:
                latex = f"{_LIMIT_WORDS[''.join(w.char for w in word)]}_{{{_row(own)}}}"
                pieces = _replaced(pieces, [*word, *own], _Piece(latex, union([w.box for w in word]), size))
    return pieces


def _right_below(piece: _Piece, word: Sequence[_Piece]) -> bool:
    """Under the word, lower than a subscript stands (its top below the word's baseline), within a size of it."""
    size, bottom = word[0].size, word[0].box[1]
    return (
        word[0].box[0] - size <= piece.cx <= word[-1].box[2] + size
        and piece.box[3] <= bottom + 0.15 * size
        and bottom - piece.box[3] < size
    )


def _by_line(words: list[list[_Piece]]) -> list[list[list[_Piece]]]:
    lines: list[list[list[_Piece]]] = []
    for word in sorted(words, key=lambda w: w[0].box[0]):
        line = next((line for line in lines if _same_line(line[0][0], word[0])), None)
        if line is None:
            lines.append([word])
        else:
            line.append(word)
    return lines


def _same_line(a: _Piece, b: _Piece) -> bool:
    return abs(a.box[1] - b.box[1]) < 0.3 * max(a.size, b.size)


def _operator_words(pieces: Sequence[_Piece]) -> list[list[_Piece]]:
    """Runs of letters of one size on one baseline, close together, that spell an operator of _LIMIT_WORDS."""
    letters = sorted((p for p in pieces if p.char.isascii() and p.char.isalpha()), key=lambda p: p.box[0])
    words: list[list[_Piece]] = []
    taken: set[int] = set()
    for start in letters:
        if id(start) in taken:
            continue
        word = [start]
        while (following := _next_letter(word[-1], letters)) is not None:
            word.append(following)
        taken.update(id(p) for p in word)
        if "".join(p.char for p in word) in _LIMIT_WORDS:
            words.append(word)
    return words


def _next_letter(letter: _Piece, letters: Sequence[_Piece]) -> Optional[_Piece]:
    size = letter.size
    near = [
        p
        for p in letters
        if p.box[0] > letter.box[0]
        and abs(p.size - size) < 0.1 * size
        and _same_line(p, letter)
        and p.box[0] - letter.box[2] < 0.25 * size
    ]
    return min(near, key=lambda p: p.box[0]) if near else None


def _line_around(seed: list[_Piece], small: Sequence[_Piece], size: float) -> list[_Piece]:
    """The whole small line the seed glyphs belong to: a limit wider than its operator reaches past it."""
    line = list(seed)
    taken = {id(p) for p in line}
    level = median(p.cy for p in seed)
    rest = sorted((p for p in small if id(p) not in taken and abs(p.cy - level) < 0.3 * size), key=lambda p: p.box[0])
    grown = True
    while grown:
        grown = False
        for p in rest:
            if id(p) in taken:
                continue
            left, right = min(q.box[0] for q in line), max(q.box[2] for q in line)
            if left - _SCRIPT_GAP * size < p.box[2] and p.box[0] < right + _SCRIPT_GAP * size:
                line.append(p)
                taken.add(id(p))
                grown = True
    return line


def _limits_joined(pieces: list[_Piece]) -> list[_Piece]:
    """Small glyphs right above or below a big operator, within its span: its limits (\\sum_{k=1}^{n})."""
    for op in [p for p in pieces if p.char in _BIG_OPERATORS]:
        small = [p for p in pieces if p.size < _SCRIPT_SIZE * op.size and op.box[0] - 2 <= p.cx <= op.box[2] + 2]
        above = [p for p in small if p.box[1] >= op.box[3] - 0.2 * op.size and p.box[1] - op.box[3] < op.size]
        below = [p for p in small if p.box[3] <= op.box[1] + 0.2 * op.size and op.box[1] - p.box[3] < op.size]
        if not above and not below:
            continue
        latex = op.latex + (f"_{{{_row(below)}}}" if below else "") + (f"^{{{_row(above)}}}" if above else "")
        joined = _Piece(latex, union([op.box] + [p.box for p in above + below]), op.size)
        pieces = _replaced(pieces, [op, *above, *below], joined)
    return pieces


def _bands(pieces: Sequence[_Piece]) -> list[list[_Piece]]:
    """Pieces in rows that do not overlap (the lines of an aligned formula), top to bottom: never read
    across one another."""
    bands: list[tuple[list[_Piece], list[float]]] = []
    for piece in sorted(pieces, key=lambda p: -p.box[3]):
        low, high = piece.box[1], piece.box[3]
        band = next((b for b in bands if min(b[1][1], high) - max(b[1][0], low) > 0), None)
        if band is None:
            bands.append(([piece], [low, high]))
        else:
            band[0].append(piece)
            band[1][0], band[1][1] = min(band[1][0], low), max(band[1][1], high)
    return [members for members, _ in bands]


def _accents_joined(pieces: list[_Piece]) -> list[_Piece]:
    accents = [p for p in pieces if p.char in ACCENT_OF]
    out = [p for p in pieces if p.char not in ACCENT_OF]
    for accent in accents:
        below = [
            p for p in out if p.box[0] - 1 <= accent.cx <= p.box[2] + 1 and p.cy < accent.box[1] <= p.box[3] + p.size
        ]
        if not below:
            out.append(accent)
            continue
        base = min(below, key=lambda p: accent.box[1] - p.box[3])
        joined = _Piece(f"{ACCENT_OF[accent.char]}{{{base.latex}}}", base.box, base.size)  # placed as its letter
        out = [joined if p is base else p for p in out]
    return out


def _radical(pieces: list[_Piece], rule: BBox) -> Optional[list[_Piece]]:
    """A radical sign whose top meets the bar's left end: \\sqrt of what the bar covers."""
    signs = [p for p in pieces if p.char == "√" and bar_of(Char(p.char, p.box, p.size), rule)]
    if not signs:
        return None
    sign = signs[0]
    inside = [p for p in pieces if p is not sign and rule[0] <= p.cx <= rule[2] and p.box[3] <= rule[3] + 1.0]
    inside = [p for p in inside if p.box[3] >= sign.box[1] - 0.2 * sign.size]
    if not inside:
        return None
    root = _Piece(f"\\sqrt{{{_row(inside)}}}", union([sign.box, rule] + [p.box for p in inside]), sign.size)
    return _replaced(pieces, [sign, *inside], root)


def _fraction(pieces: list[_Piece], rule: BBox) -> Optional[list[_Piece]]:
    """Glyphs right above and right below a bar and within its span: \\frac."""
    spanned = [p for p in pieces if rule[0] - 1 <= p.cx <= rule[2] + 1]
    if not spanned:
        return None
    size = median(p.size for p in spanned)
    reach = _STACK_REACH * size
    above = [p for p in spanned if p.box[1] >= rule[1] - 0.3 and p.cy - rule[3] < reach]
    below = [p for p in spanned if p.box[3] <= rule[3] + 0.3 and rule[1] - p.cy < reach]
    if not above or not below:
        return None
    latex = f"\\frac{{{_row(above)}}}{{{_row(below)}}}"
    frac = _Piece(latex, union([rule] + [p.box for p in above + below]), size)
    frac.box = (rule[0], frac.box[1], rule[2], frac.box[3])
    return _replaced(pieces, above + below, frac)


def _replaced(pieces: list[_Piece], taken: Sequence[_Piece], new: _Piece) -> list[_Piece]:
    ids = {id(p) for p in taken}
    return [p for p in pieces if id(p) not in ids] + [new]


# --------------------------------------------------------------------------------- one row


def _row(pieces: Sequence[_Piece]) -> str:
    """Pieces left to right, scripts attached to their base, words set upright."""
    ordered = sorted(pieces, key=lambda p: (p.box[0], -p.cy))
    size = _row_size(ordered)
    parts: list[str] = []
    base: Optional[_Piece] = None
    at = 0
    while at < len(ordered):
        piece = ordered[at]
        if base is not None and _is_script(piece, base, size):
            scripts = [piece]
            while at + 1 < len(ordered) and _is_script(ordered[at + 1], base, size, scripts[-1]):
                at += 1
                scripts.append(ordered[at])
            parts[-1] += _scripts(scripts, base)
        else:
            parts.append(_word_or_glyph(ordered, at, size))
            at += _word_length(ordered, at, size) - 1
            base = ordered[at] if at < len(ordered) else piece
        at += 1
    return _joined(_roots_bare(parts))


def _row_size(pieces: Sequence[_Piece]) -> float:
    glyphs = [p.size for p in pieces if not p.char or p.char not in "()[]{}|"] or [p.size for p in pieces]
    return max(glyphs)


def _is_script(piece: _Piece, base: _Piece, size: float, previous: Optional[_Piece] = None) -> bool:
    if piece.size >= _SCRIPT_SIZE * size or base.size < _SCRIPT_SIZE * size:
        return False
    last = previous or base
    return piece.box[0] - last.box[2] < _SCRIPT_GAP * size and abs(piece.cy - base.cy) > 0.1 * base.size


def _scripts(scripts: Sequence[_Piece], base: _Piece) -> str:
    sup = [p for p in scripts if p.cy > base.cy]
    sub = [p for p in scripts if p.cy <= base.cy]
    out = f"_{{{_row(sub)}}}" if sub else ""
    return out + (f"^{{{_row(sup)}}}" if sup else "")


def _word_length(pieces: Sequence[_Piece], at: int, size: float) -> int:
    """How many letters from ``at`` make one word (1 for anything else)."""
    end = at
    while (
        end + 1 < len(pieces)
        and pieces[end].char.isascii()
        and pieces[end].char.isalpha()
        and pieces[end + 1].char.isascii()
        and pieces[end + 1].char.isalpha()
        and pieces[end + 1].size >= _SCRIPT_SIZE * size
        and pieces[end + 1].box[0] - pieces[end].box[2] < 1.2 * size
    ):
        end += 1
    return end - at + 1


def _word_or_glyph(pieces: Sequence[_Piece], at: int, size: float) -> str:
    length = _word_length(pieces, at, size)
    if length < 3:
        return pieces[at].latex if length == 1 else pieces[at].latex + pieces[at + 1].latex
    letters = pieces[at : at + length]
    word = letters[0].char
    for left, right in zip(letters, letters[1:]):
        word += ("\\ " if right.box[0] - left.box[2] > _WORD_GAP * size else "") + right.char
    return f"\\{word}" if word in FUNCTIONS else f"\\mathrm{{{word}}}"


def _roots_bare(parts: list[str]) -> list[str]:
    """A radical sign without a bar: the root of the part right after it."""
    out: list[str] = []
    for part in parts:
        if out and out[-1] == "\\sqrt":
            out[-1] = f"\\sqrt{{{part}}}"
        else:
            out.append(part)
    return out


def _joined(parts: Sequence[str]) -> str:
    text = ""
    for part in parts:
        if text and needs_space_after(text) and (part[:1].isalpha()):
            text += " "
        text += part
    return text
