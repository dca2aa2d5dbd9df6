"""Status icons that render without an emoji font: plain symbols from DejaVu Sans (Debian's default font).

Emoji show as empty boxes on a stock Debian browser. These code points are text symbols
that DejaVu Sans and most system fonts have; the colour comes from CSS classes in assets/style.css.
"""

from __future__ import annotations

SYMBOLS = {
    "ok": "\u2713",  # ✓
    "fail": "\u2717",  # ✗
    "warn": "\u26a0",  # ⚠ (text presentation, no VS16)
    "info": "\u2139",  # ℹ
    "deleted": "\u2713",  # ✓ (a success: not the failure's ✗)
    "stop": "\u25a0",  # ■
    "same": "\u2261",  # ≡ (a duplicate: nothing changed)
    "replace": "\u21bb",  # ↻
    "figure": "\u25a3",  # ▣
    "sources": "\u2261",  # ≡
    "close": "\u2715",  # ✕
}


def icon(name: str) -> str:
    """An inline icon for Markdown/HTML: the symbol in a span coloured by its class."""
    return f'<span class="dl-icon dl-icon-{name}" aria-hidden="true">{SYMBOLS[name]}</span>'


def plain(name: str) -> str:
    """The bare symbol, for places that show text only (chat message titles, button labels)."""
    return SYMBOLS[name]
