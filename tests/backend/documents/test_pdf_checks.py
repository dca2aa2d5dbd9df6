"""Files that must be refused before any work, each with a one-line reason naming the file."""

from __future__ import annotations

import pytest

from backend.documents.pdf import iter_pages
from backend.documents.pdf_checks import inspect_pdf
from backend.errors import DocumentError
from tests.backend.documents.pdf_fixtures import write_bad_inputs
from tests.conftest import SAMPLES, make_settings

GOOD = SAMPLES / "layout" / "native_zh_en_20p.pdf"
REASONS = {
    "empty": "empty",
    "text": "not a PDF",
    "png": "PNG",
    "docx": "ZIP",
    "truncated": "truncated",
    "encrypted": "password",
}


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory):
    return write_bad_inputs(tmp_path_factory.mktemp("bad"), GOOD)


@pytest.mark.parametrize("kind", sorted(REASONS))
def test_bad_input_is_refused_with_its_name(bad_files, kind, settings):
    path = bad_files[kind]
    with pytest.raises(DocumentError) as caught:
        inspect_pdf(path, settings)
    message = str(caught.value)
    assert message.startswith(path.name + ":") and "\n" not in message
    assert REASONS[kind] in message


def test_iter_pages_checks_first(bad_files, settings):
    with pytest.raises(DocumentError, match="password"):
        next(iter_pages(bad_files["encrypted"], settings))


def test_limits(tmp_path):
    assert inspect_pdf(GOOD, make_settings(tmp_path)) == 20
    few_pages = make_settings(tmp_path, DOCLENS_INGEST_MAX_PAGES="5")
    with pytest.raises(DocumentError, match=r"native_zh_en_20p.pdf: 20 pages is over the limit of 5"):
        inspect_pdf(GOOD, few_pages)
    small = make_settings(tmp_path, DOCLENS_INGEST_MAX_FILE_MB="0.05")
    with pytest.raises(DocumentError, match=r"native_zh_en_20p.pdf: .* MB is over the 0.05 MB limit"):
        inspect_pdf(GOOD, small)


def test_missing_file(tmp_path, settings):
    with pytest.raises(DocumentError, match="nothing.pdf"):
        inspect_pdf(tmp_path / "nothing.pdf", settings)
