"""Drawn formulas read from their kept images by the vision model when a passage holding one goes to the
model (backend/answering/formula_images.py), against the recording fake server."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Optional

import pytest
from PIL import Image

from backend.answering.formula_images import MAX_READ_PER_QUESTION, clean_latex, with_formulas_read
from backend.types import Source
from tests.backend.answering.support import SOURCES, make_client
from tests.support.fake_openai import FakeOpenAI, default_reply, images_in

LATEX = r"\hat{H}=\frac{\hat{p}^{2}}{2m}+\frac{1}{2}m\omega^{2}\hat{x}^{2}"
GARBLED = "[formula image p1_eq1, OCR: H 32/2m十1/2mωx] (1)"


def _reading(latex: str = LATEX):
    def reply(body: dict[str, Any]) -> str:
        return f"```latex\n{latex}\n```" if '"image_url"' in str(body).replace("'", '"') else default_reply(body)

    return reply


def _kept(folder: Path, keys: list[str]) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    for key in keys:
        Image.new("RGB", (240, 40), "white").save(folder / f"{key}.png")
    return {key: folder / f"{key}.png" for key in keys}


def _source(text: str) -> Source:
    return dataclasses.replace(SOURCES[0], text=text)


def test_the_vision_model_reads_a_marked_formula_once_and_the_reading_is_cached(tmp_path: Path, fake: FakeOpenAI):
    fake.reply = _reading()
    kept = _kept(tmp_path / "figures", ["p1_eq1"])
    llm = make_client(tmp_path, fake.base_url)

    def image_of(source: Source, key: str) -> Optional[Path]:
        return kept.get(key)

    [read] = with_formulas_read(llm, [_source(f"定义为：{GARBLED} 其中 m 是质量。")], image_of)
    assert read.text == f"定义为：$$ {LATEX} $$ (1) 其中 m 是质量。"
    [request] = fake.vision_requests()
    [(mime, png)] = images_in(request)
    assert mime == "image/png" and png == kept["p1_eq1"].read_bytes()
    assert kept["p1_eq1"].with_suffix(".tex").read_text(encoding="utf-8") == LATEX
    again = with_formulas_read(llm, [_source(GARBLED)], image_of)
    assert again[0].text == f"$$ {LATEX} $$ (1)" and len(fake.vision_requests()) == 1, "read from the cache"


def test_without_a_model_or_an_image_the_marked_ocr_reading_stays(tmp_path: Path, fake: FakeOpenAI):
    kept = _kept(tmp_path / "figures", ["p1_eq1"])
    sources = [_source(GARBLED)]
    assert with_formulas_read(None, sources, lambda s, k: kept[k]) == sources
    llm = make_client(tmp_path, fake.base_url)
    assert with_formulas_read(llm, sources, lambda s, k: None) == sources
    assert fake.vision_requests() == []


def test_a_reply_that_is_no_formula_is_not_used_and_not_asked_again(tmp_path: Path, fake: FakeOpenAI):
    fake.reply = _reading("I cannot read this image, sorry.")
    kept = _kept(tmp_path / "figures", ["p1_eq1"])
    llm = make_client(tmp_path, fake.base_url)
    for _ in range(2):
        assert with_formulas_read(llm, [_source(GARBLED)], lambda s, k: kept[k])[0].text == GARBLED
    assert len(fake.vision_requests()) == 1


def test_a_failing_model_leaves_the_reading_and_tries_again_next_time(tmp_path: Path, fake: FakeOpenAI):
    kept = _kept(tmp_path / "figures", ["p1_eq1"])
    llm = make_client(tmp_path, fake.base_url, DOCLENS_LLM_MAX_RETRIES="0")
    fake.fail_next(500)
    assert with_formulas_read(llm, [_source(GARBLED)], lambda s, k: kept[k])[0].text == GARBLED
    fake.reply = _reading()
    assert with_formulas_read(llm, [_source(GARBLED)], lambda s, k: kept[k])[0].text == f"$$ {LATEX} $$ (1)"


def test_one_question_reads_a_bounded_number_of_new_formulas(tmp_path: Path, fake: FakeOpenAI):
    fake.reply = _reading()
    keys = [f"p1_eq{i}" for i in range(1, MAX_READ_PER_QUESTION + 3)]
    kept = _kept(tmp_path / "figures", keys)
    llm = make_client(tmp_path, fake.base_url)
    text = " ".join(f"[formula image {key}, OCR: x]" for key in keys)
    [read] = with_formulas_read(llm, [_source(text)], lambda s, k: kept[k])
    assert read.text.count("$$") == 2 * MAX_READ_PER_QUESTION and read.text.count("[formula image") == 2


def test_a_mark_imitated_by_a_pdf_s_own_text_names_no_other_file(tmp_path: Path, fake: FakeOpenAI):
    from backend.answering.formula_images import kept_in

    class OneKB:
        name = "kb"

        def figure_dir(self, doc_id: str) -> Path:
            return tmp_path / "figures" / doc_id

    image_of = kept_in([OneKB()])  # type: ignore[list-item]
    assert image_of(_source(""), "../../secret") is None
    assert image_of(dataclasses.replace(SOURCES[0], doc_id="../other"), "p1_eq1") is None
    assert image_of(SOURCES[0], "p1_eq1") == tmp_path / "figures" / SOURCES[0].doc_id / "p1_eq1.png"
    text = "[formula image ../../x, OCR: y]"
    llm = make_client(tmp_path, fake.base_url)
    assert with_formulas_read(llm, [_source(text)], image_of)[0].text == text and fake.vision_requests() == []


@pytest.mark.parametrize(
    "reply, latex",
    [
        ("$$E_n = \\hbar\\omega (n+\\tfrac12)$$", "E_n = \\hbar\\omega (n+\\tfrac12)"),
        ("\\[ E_0=\\frac12\\hbar\\omega \\]", "E_0=\\frac12\\hbar\\omega"),
        ("CAGR = (Ending Value / Beginning Value)^{1/n} - 1", "CAGR = (Ending Value / Beginning Value)^{1/n} - 1"),
        ("The figure shows a curve that rises with $x^2$.", None),
        ("Sorry, I can't see it", None),
        ("这是一个公式图片无法识别", None),
        ("x" * 700, None),
        ("a $$ \\alert{x} $$ b", None),  # would end the display math it is put in
    ],
)
def test_clean_latex(reply: str, latex: Optional[str]) -> None:
    assert clean_latex(reply) == latex
