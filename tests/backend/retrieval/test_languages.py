"""LibraryLanguages (backend/retrieval/languages.py): a question is translated only for a knowledge base that
holds passages in the other language. Real Milvus Lite, real PDFs, the recording model server."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from backend.service import DocLens
from backend.settings import with_changes
from tests.conftest import SAMPLES, make_settings
from tests.support.fake_openai import FakeOpenAI, translating_reply
from tests.support.text_pdf import write_text_pdf

ENGLISH = "sensor clustering.pdf"
CHINESE = "物理公式示例文档.pdf"  # a shared sample: harmonic oscillator formulas, in Chinese
EN_ONLY, BOTH, GROWING = "english only", "both languages", "growing"
ENGLISH_QUESTION = "Which readings are grouped by a median-based distance?"
CHINESE_QUESTION = "哪些读数按基于中位数的距离分组？"
TRANSLATIONS = {ENGLISH_QUESTION: "哪些读数按中位数距离分组？", CHINESE_QUESTION: ENGLISH_QUESTION}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("languages")
    write_text_pdf(
        folder / ENGLISH,
        [
            ["Robust Clustering of Noisy Sensor Networks", "Readings are grouped by a median-based distance."],
            ["Results", "On sensor networks the method is faster than the baselines at equal memory."],
        ],
    )
    return folder


@pytest.fixture(scope="module")
def service(folder: Path) -> Iterator[DocLens]:
    with DocLens(make_settings(folder / "data")) as svc:
        for kb, files in ((EN_ONLY, [folder / ENGLISH]), (BOTH, [folder / ENGLISH, SAMPLES / CHINESE])):
            svc.create_kb(kb)
            assert all(r.ok for r in svc.ingest(kb, files))
        yield svc


@contextmanager
def translating_model(service: DocLens, fake: FakeOpenAI) -> Iterator[None]:
    before = service.settings
    fake.reply, fake.requests = translating_reply(TRANSLATIONS), []
    changes = {
        "llm": {"base_url": fake.base_url, "model": "fake-chat", "qps": 50, "max_retries": 0},
        "retrieval": {"query_expansion": True},
    }
    service.reconfigure(with_changes(before, changes))
    try:
        yield
    finally:
        service.reconfigure(before)


def translations_asked(fake: FakeOpenAI) -> list[str]:
    return [r.messages[-1]["content"] for r in fake.chat_requests() if "Translate the user's question" in r.text()]


def test_a_library_of_one_language_is_searched_without_a_translation(service: DocLens, fake: FakeOpenAI) -> None:
    """An English question over English papers: the model is not asked (a request, and its wait, saved);
    a Chinese question over them is translated, as before."""
    with translating_model(service, fake):
        english = service.search(EN_ONLY, ENGLISH_QUESTION)
        assert translations_asked(fake) == [] and english.queries == [ENGLISH_QUESTION]
        assert english.sources[0].file == ENGLISH
        chinese = service.search(EN_ONLY, CHINESE_QUESTION)
    assert translations_asked(fake) == [CHINESE_QUESTION]
    assert chinese.queries == [CHINESE_QUESTION, ENGLISH_QUESTION] and chinese.sources[0].file == ENGLISH


def test_a_library_of_both_languages_translates_every_question(service: DocLens, fake: FakeOpenAI) -> None:
    with translating_model(service, fake):
        service.search(BOTH, ENGLISH_QUESTION)
        service.search(BOTH, CHINESE_QUESTION)
    assert translations_asked(fake) == [ENGLISH_QUESTION, CHINESE_QUESTION]


def test_a_document_in_the_other_language_counts_once_it_is_stored(
    service: DocLens, fake: FakeOpenAI, folder: Path
) -> None:
    service.create_kb(GROWING)
    assert all(r.ok for r in service.ingest(GROWING, [folder / ENGLISH]))
    with translating_model(service, fake):
        service.search(GROWING, ENGLISH_QUESTION)
        assert translations_asked(fake) == []
        assert all(r.ok for r in service.ingest(GROWING, [SAMPLES / CHINESE]))
        service.search(GROWING, ENGLISH_QUESTION)
    assert translations_asked(fake) == [ENGLISH_QUESTION]
