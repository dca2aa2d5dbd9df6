"""The fake OpenAI-compatible server every answering test that needs a model talks to."""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.support.fake_openai import FakeOpenAI


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server
