"""ui/common.py: the document pickers over a large library."""

from __future__ import annotations

from pathlib import Path

from backend.knowledge_bases.registry import Registry
from backend.quality.bench_page import registered_documents
from backend.service import DocLens
from tests.conftest import make_settings
from ui.common import PICKER_CHOICES, doc_filter_dropdown, has_document


def test_a_picked_document_is_kept_when_many_names_contain_its_name(tmp_path: Path) -> None:
    """Noticed in issue 27: has_document looked only at the first PICKER_CHOICES names containing the
    pick, so "a.pdf" behind "0000a.pdf" … "0149a.pdf" was dropped from the Chat tab's filter."""
    with DocLens(make_settings(tmp_path / "data")) as service:
        kb = service.create_kb("many")
        names = [f"{i:04d}a.pdf" for i in range(PICKER_CHOICES + 50)] + ["a.pdf"]
        Registry(tmp_path / "data" / "kbs" / kb.collection).add_documents(
            registered_documents(len(names), lambda i: names[i])
        )
        assert has_document(service, "many", "a.pdf")
        assert not has_document(service, "many", "b.pdf")
        update = doc_filter_dropdown(service, "many", ["a.pdf"])
        assert update["value"] == ["a.pdf"] and "a.pdf" in update["choices"]
