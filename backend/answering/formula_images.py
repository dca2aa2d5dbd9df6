"""Formulas drawn without text, read as LaTeX from their images by the configured vision model.

Such a formula has no text layer; OCR garbles it ("H 32/2m十1/2mωx"), so the parser marks that reading as
OCR of an image (``documents.equations.formula_mark``) and its image is kept beside the document's
figures. With a model configured, the ingest has the vision model read each as LaTeX, which goes into the
stored text (``ingest.read_formulas``); a formula still marked when its passage goes to the model (ingested
without one, or past the document's budget) is read then. Each reading is cached beside its image
(``p1_eq1.tex``). Without a model, or when it fails, the marked OCR reading stays (the prompt says what it
is).
"""

from __future__ import annotations

import dataclasses
import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from backend.documents.equations import FORMULA_IMAGE, FORMULA_IMAGE_MARK, FORMULA_KEY
from backend.errors import LLMError
from backend.knowledge_bases.open_kb import OpenKB
from backend.types import Source

if TYPE_CHECKING:  # the OpenAI SDK: imported by the client when a model is used
    from backend.llm.client import LLMClient

log = logging.getLogger(__name__)

DOC_ID = re.compile(r"[0-9A-Za-z_-]{1,80}")  # a path part, never ".." or a separator
MAX_READ_PER_QUESTION = 4  # vision calls for formulas not read before; the rest keep their OCR reading
MAX_READ_PER_DOCUMENT = 60  # at ingest (``ingest.read_formulas``): the rest are read when cited
MAX_LATEX_CHARS = 600  # a longer reply is not one formula
READ_PROMPT = (
    "This image shows one mathematical formula from a document. Write it in LaTeX exactly as shown, "
    "without $ signs, without an equation number and without any other text."
)

FormulaImage = Callable[[Source, str], Optional[Path]]  # the PNG of a source's formula by its key, if kept


def kept_in(kbs: Sequence[OpenKB]) -> FormulaImage:
    """Where the knowledge bases keep a source's formula images: beside its document's figures."""
    by_name = {kb.name: kb for kb in kbs}

    def image_of(source: Source, key: str) -> Optional[Path]:
        kb = by_name.get(source.kb) or (kbs[0] if len(kbs) == 1 else None)
        if kb is None or not FORMULA_KEY.fullmatch(key) or not DOC_ID.fullmatch(source.doc_id):
            return None
        return kb.figure_dir(source.doc_id) / f"{key}.png"

    return image_of


def with_formulas_read(llm: Optional[LLMClient], sources: Sequence[Source], image_of: FormulaImage) -> list[Source]:
    """The sources, each drawn formula's OCR reading replaced by the LaTeX read from its image."""
    reader = FormulaReader(llm, MAX_READ_PER_QUESTION)
    return [_read_in(reader, source, image_of) for source in sources]


def _read_in(reader: FormulaReader, source: Source, image_of: FormulaImage) -> Source:
    text = reader.read(source.text, lambda key: image_of(source, key))
    return source if text == source.text else dataclasses.replace(source, text=text)


class FormulaReader:
    """One model reading the marked formulas of texts: each image once (its reading cached beside it), at
    most ``limit`` not read before, so a question or a document with many costs a bounded wait."""

    def __init__(self, llm: Optional[LLMClient], limit: int):
        self.llm = llm if llm is not None and llm.configured else None
        self.left = limit

    def read(self, text: str, image_of: Callable[[str], Optional[Path]]) -> str:
        """``text`` with each mark whose image reads as a formula replaced by ``$$ LaTeX $$``."""
        if FORMULA_IMAGE_MARK not in text:
            return text

        def latex_for(match: re.Match[str]) -> str:
            image = image_of(match.group("key"))
            latex = self._latex(image) if image is not None else None
            return f"$$ {latex} $$" if latex else match.group(0)

        return FORMULA_IMAGE.sub(latex_for, text)

    def _latex(self, image: Path) -> Optional[str]:
        cached = image.with_suffix(".tex")
        if cached.is_file():
            return cached.read_text(encoding="utf-8").strip() or None
        if self.llm is None or self.left <= 0 or not image.is_file():
            return None
        self.left -= 1
        try:
            reply = self.llm.vision(READ_PROMPT, image.read_bytes(), "image/png", max_tokens=300, temperature=0.0)
        except (LLMError, OSError) as exc:  # the OCR reading stays, read again next time; no more now
            log.warning("formula %s not read by the vision model: %s", image.name, exc)
            self.left = 0
            return None
        latex = clean_latex(reply)
        if latex is None:  # cached as "none": a model that cannot read it is not asked on every question
            log.warning("formula %s: the vision model's reply is no formula: %r", image.name, reply[:80])
        try:
            cached.write_text(latex or "", encoding="utf-8")
        except OSError as exc:  # read again next time
            log.warning("formula %s: reading not cached: %s", image.name, exc)
        return latex


_PROSE = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{2,}(?:[ ,.;:']+[A-Za-z]+){3}")  # four words in a row: a sentence
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]{6,}")
_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")
_DELIMITERS = (("$$", "$$"), ("\\[", "\\]"), ("\\(", "\\)"), ("$", "$"))


def clean_latex(reply: str) -> Optional[str]:
    """The formula of a model's reply: code fences and math delimiters taken off, on one line; None when
    it is empty, too long to be one formula, or would end the display math it is put in."""
    latex = _FENCE.sub("", reply.strip()).strip()
    for start, end in _DELIMITERS:
        if latex.startswith(start) and latex.endswith(end) and len(latex) > len(start) + len(end):
            latex = latex[len(start) : -len(end)].strip()
            break
    latex = " ".join(latex.split())
    if not latex or len(latex) > MAX_LATEX_CHARS or "$" in latex or FORMULA_IMAGE_MARK in latex:
        return None
    return None if _PROSE.search(latex) or _CJK_RUN.search(latex) else latex
