"""TrashHandlers (ui/knowledge_bases/trash.py) over a real DocLens: a document deleted from the KB tab is
listed in the trash with who deleted it, and restored from there; names in use are never clobbered."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from backend.service import DocLens
from tests.ui.handler_support import KB, PHYSICS, WARN
from ui.i18n.messages import translate_error
from ui.icons import icon
from ui.knowledge_bases.handlers import KBHandlers
from ui.knowledge_bases.trash import TrashHandlers

pytestmark = pytest.mark.usefixtures("fake_model")
ALICE = SimpleNamespace(username="alice", session_hash="")  # a logged-in user's request


def test_a_deleted_document_is_listed_in_the_trash_and_restored(service: DocLens) -> None:
    handlers = KBHandlers(service)
    trash = TrashHandlers(handlers)
    _row, message, pending, _ = handlers.ask_delete_document(KB, PHYSICS)
    assert "stays in the trash for 7 days" in message and "cannot be undone" not in message
    status, _row, table, _pick, _ = handlers.delete_document(pending, ALICE)
    assert status.startswith(icon("deleted")) and "trash" in status
    assert PHYSICS not in [row[0] for row in table["value"]]
    table, pick = trash.refresh()
    [row] = [r for r in table["value"] if r[3] == PHYSICS]
    assert row[1:4] == ["document", KB, PHYSICS] and row[5] == "alice"
    assert pick["value"] is None and row[0] in [value for _label, value in pick["choices"]]

    status, table, pick, name_box, kb_picker, docs = trash.restore(row[0], "", KB, ALICE)
    assert status.startswith(icon("ok")) and PHYSICS in status
    assert [r[0] for r in docs["value"]] == [PHYSICS] and kb_picker["value"] == KB
    assert all(r[0] != row[0] for r in table["value"])
    assert [(line["who"], line["what"]) for line in service.trash.audit.lines()][-2:] == [
        ("alice", "delete_document"),
        ("alice", "restore_document"),
    ]


def test_restoring_a_kb_whose_name_is_taken_says_so_then_takes_a_new_name(service: DocLens) -> None:
    handlers = KBHandlers(service)
    trash = TrashHandlers(handlers)
    handlers.create("twice", KB)
    _row, message, pending = handlers.ask_delete("twice")
    assert "stay in the trash" in message
    handlers.delete(pending)
    handlers.create("twice", KB)
    [entry] = [e for e in service.trash_entries() if e.kb == "twice"]
    status, *_ = trash.restore(entry.id, "", KB)
    assert status.startswith(WARN) and "'twice' already exists; choose another name" in status
    zh = translate_error(
        "cannot restore 'twice' from the trash as 'twice': knowledge base 'twice' already exists", "zh"
    )
    assert zh == "无法将“twice”从回收站恢复为“twice”：知识库“twice”已存在；请换一个名称"
    status, _table, _pick, name_box, kb_picker, _docs = trash.restore(entry.id, "twice (old)", KB)
    assert status.startswith(icon("ok")) and kb_picker["value"] == "twice (old)" and name_box == ""
    for name in ("twice", "twice (old)"):
        service.delete_kb(name, permanently=True)


def test_emptying_the_trash_asks_first(service: DocLens) -> None:
    handlers = KBHandlers(service)
    trash = TrashHandlers(handlers)
    handlers.create("gone", KB)
    handlers.delete("gone")
    row, message = trash.ask_empty()
    assert row["visible"] is True and "for good" in message
    status, row, table, _pick = trash.empty(ALICE)
    assert status.startswith(icon("deleted")) and table["value"] == [] and service.trash_entries() == []
