"""Formulas drawn without text (issue 29 item 2), end to end through the DocLens facade: real Milvus Lite,
the bundled embedder, the real parser and OCR on the physics sample, FakeOpenAI as the vision model.

The sample's formulas are glyph outlines; OCR reads the first as "H 32/2m十1/2mωx". Their images are kept
at ingest; the vision model's LaTeX goes into the stored text when a model is configured at ingest, and
into what the model reads (and the sources shown) when a question cites a passage still marked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from backend.service import DocLens
from tests.conftest import SAMPLES, make_settings
from tests.support.fake_openai import FakeOpenAI, RecordedRequest, default_reply, images_in

PHYSICS = "物理公式示例文档.pdf"
QUESTION = "简谐振子的能级公式是什么？"
LATEX = r"E_{n}=\hbar\omega\left(n+\frac{1}{2}\right)"


def model_env(base_url: str) -> dict[str, str]:
    return {
        "DOCLENS_LLM_BASE_URL": base_url,
        "DOCLENS_LLM_MODEL": "some-model",
        "DOCLENS_LLM_VISION_MODEL": "some-vision-model",
        "DOCLENS_LLM_API_KEY": "sk-formulas",
        "DOCLENS_LLM_QPS": "50",
        "DOCLENS_RETRIEVAL_QUERY_EXPANSION": "false",
    }


def reads_formulas(body: dict[str, Any]) -> str:
    """LaTeX for an image, like the default for everything else."""
    return LATEX if images_in(RecordedRequest("POST", "/v1/chat/completions", {}, body)) else default_reply(body)


@pytest.fixture(scope="module")
def service(data_dir: Path) -> Iterator[DocLens]:
    with DocLens(make_settings(data_dir)) as svc:
        yield svc


@pytest.fixture
def reading_model(service: DocLens, data_dir: Path, fake: FakeOpenAI) -> Iterator[FakeOpenAI]:
    fake.reset()
    fake.reply = reads_formulas
    service.reconfigure(make_settings(data_dir, **model_env(fake.base_url)))
    yield fake
    fake.reply = default_reply
    service.reconfigure(make_settings(data_dir))


def formula_images(service: DocLens, kb: str) -> list[Path]:
    [doc] = service.documents(kb)
    return sorted(service.open_kb(kb).figure_dir(doc.doc_id).glob("p1_eq*.*"))


def test_with_a_model_at_ingest_the_stored_text_holds_the_formulas_as_latex(service: DocLens, reading_model):
    service.create_kb("read at ingest")
    [result] = service.ingest("read at ingest", [SAMPLES / PHYSICS])
    assert result.status == "indexed", result
    assert [p.name for p in formula_images(service, "read at ingest")] == [
        "p1_eq1.png",
        "p1_eq1.tex",
        "p1_eq2.png",
        "p1_eq2.tex",
    ]
    assert (
        len(reading_model.vision_requests()) == 2 and reading_model.chat_requests() == reading_model.vision_requests()
    )
    stored = " ".join(chunk.content for chunk in service.indexed_chunks("read at ingest"))
    assert f"定义为：\n\n$$ {LATEX} $$\n\n(1)" in stored and f"如下：\n\n$$ {LATEX} $$\n\n(2)" in stored
    assert "[formula image" not in stored and "OCR:" not in stored


def test_without_a_model_at_ingest_a_cited_formula_is_read_when_asked(
    service: DocLens, data_dir: Path, fake: FakeOpenAI
):
    fake.reset()
    service.create_kb("read when cited")
    [result] = service.ingest("read when cited", [SAMPLES / PHYSICS])
    assert result.status == "indexed" and fake.requests == []
    stored = " ".join(chunk.content for chunk in service.indexed_chunks("read when cited"))
    assert "[formula image p1_eq2, OCR: " in stored, "without a model the marked OCR reading is stored"
    fake.reset()
    fake.reply = reads_formulas
    service.reconfigure(make_settings(data_dir, **model_env(fake.base_url)))
    try:
        answer = service.ask("read when cited", QUESTION)
        read = len(fake.vision_requests())
        service.ask("read when cited", QUESTION)
    finally:
        fake.reply = default_reply
        service.reconfigure(make_settings(data_dir))
    assert read >= 1 and len(fake.vision_requests()) == read, "each formula is read once, then from its cache"
    prompt = [r for r in fake.chat_requests() if r.body.get("stream")][0].messages[-1]["content"]  # the sources
    assert f"$$ {LATEX} $$ (2)" in prompt and "[formula image" not in prompt and "OCR:" not in prompt
    assert any(f"$$ {LATEX} $$" in source.text for source in answer.sources), "the sources shown say the same"


def test_the_sources_are_shown_before_their_formulas_are_read_and_again_once_read(
    service: DocLens, data_dir: Path, fake: FakeOpenAI
):
    """Reading a formula image is a vision call (up to four a question): the sources must not wait for it."""
    service.create_kb("sources first")
    [result] = service.ingest("sources first", [SAMPLES / PHYSICS])
    assert result.status == "indexed"
    fake.reset()
    fake.reply = reads_formulas
    service.reconfigure(make_settings(data_dir, **model_env(fake.base_url)))
    try:
        updates = service.ask_stream("sources first", QUESTION)
        first = next(updates)
        asked_before_the_sources = len(fake.vision_requests())
        rest = list(updates)
    finally:
        fake.reply = default_reply
        service.reconfigure(make_settings(data_dir))
    assert first.sources and any("[formula image" in source.text for source in first.sources)
    assert asked_before_the_sources == 0
    [again] = [update for update in rest if update.sources is not None]
    assert any(f"$$ {LATEX} $$" in source.text for source in again.sources) and rest[-1].done
