"""Display names <-> kb_<hex> collection names."""

import pytest

from backend.errors import KnowledgeBaseError
from backend.knowledge_bases import names


@pytest.mark.parametrize(
    "name",
    ["物理论文", "Physics papers", "📚 notes 🧪", "混合 Mixed 名字-2", "a", "x" * 42, "论" * 42, 'O\'Brien "quotes"'],
)
def test_round_trip(name):
    collection = names.collection_name(name)
    assert collection.startswith("kb_") and len(collection) <= 255
    assert collection[3:] == collection[3:].lower()
    assert names.display_name(collection) == name


def test_chinese_name_is_utf8_hex():
    # 物 e789a9, 理 e79086, 论 e8aeba, 文 e69687 (the example has a stray "8e" inside)
    assert names.collection_name("物理论文") == "kb_e789a9e79086e8aebae69687"


def test_names_are_trimmed():
    assert names.validate_name("  reports \n") == "reports"
    assert names.collection_name("  reports ") == names.collection_name("reports")


@pytest.mark.parametrize(
    "name,reason",
    [
        ("", "empty"),
        ("   ", "empty"),
        ("x" * 43, "at most 42"),
        ("论" * 43, "at most 42"),
        ("bad\x00name", "control"),
        ("tab\there", "control"),
        ("🧪" * 40, "too long"),
    ],
)
def test_invalid_names(name, reason):
    with pytest.raises(KnowledgeBaseError, match=reason):
        names.validate_name(name)


@pytest.mark.parametrize("collection", ["other", "kb_", "kb_zz", "kb_abc", "kb_ff", "kb_2020", "KB_6162"])
def test_foreign_collection_names_do_not_decode(collection):
    assert names.display_name(collection) is None
