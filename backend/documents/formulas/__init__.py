"""Formulas as LaTeX: read from the text layer's glyph geometry (``geometry``), with one table of
symbols (``symbols``)."""
