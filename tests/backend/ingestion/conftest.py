"""The ingestion tests' fixtures: one service per module with lowered limits, one that embeds each
document on its own, and a fresh knowledge base per test."""

from __future__ import annotations

import pytest

from backend.service import DocLens
from tests.backend.ingestion.support import LIMITS, kb_name
from tests.conftest import make_settings


@pytest.fixture(scope="module")
def service_env() -> dict[str, str]:
    """Limits lowered so that real sample files can be "too big": max 5 pages, max 2 MB."""
    return dict(LIMITS)


@pytest.fixture(scope="module")
def service_one_by_one(tmp_path_factory):
    """A service that embeds each document on its own (``ingest.embed_group_chunks: 1``), so that what
    happens between one file and the next can be watched file by file."""
    data = tmp_path_factory.mktemp("one-by-one") / "data"
    with DocLens(make_settings(data, DOCLENS_INGEST_EMBED_GROUP_CHUNKS="1", **LIMITS)) as svc:
        yield svc


@pytest.fixture
def kb(service, request) -> str:
    """A fresh knowledge base per test, named after it."""
    return service.create_kb(kb_name(request)).name


@pytest.fixture
def kb_one_by_one(service_one_by_one, request) -> str:
    return service_one_by_one.create_kb(kb_name(request)).name
