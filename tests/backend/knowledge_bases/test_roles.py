"""Roles per knowledge base when logins are on (issue 27 item 3), checked by the service on every call: the
creator owns a KB, private until shared; readers ask, editors also add and delete documents, owners also
rename, share and delete; a refused call changes nothing; KBs from before the upgrade are the admin's and
everyone's as editors; without logins one user may do everything. Real Milvus Lite, real PDFs."""

from __future__ import annotations

import pytest

from backend.knowledge_bases.roles import AccessDenied
from backend.service import DocLens
from tests.backend.ingestion.support import BUSINESS, PHYSICS

LOGINS = ["admin", "alice", "bob", "carol"]


@pytest.fixture(scope="module")
def library(service: DocLens) -> DocLens:
    """An old KB (made before logins), then logins on: alice's private KB with one document."""
    service.create_kb("old papers")
    assert all(r.ok for r in service.ingest("old papers", [BUSINESS]))
    service.roles.configure(LOGINS, "admin")
    service.create_kb("alice notes", who="alice")
    assert all(r.ok for r in service.ingest("alice notes", [PHYSICS], who="alice"))
    yield service
    service.roles.configure(None, "")


def names(service: DocLens, who: str) -> set[str]:
    return {kb.name for kb in service.list_kbs(who)}


def test_a_new_kb_is_private_to_its_creator(library: DocLens) -> None:
    assert names(library, "alice") == {"old papers", "alice notes"}
    assert names(library, "bob") == {"old papers"}, "bob does not see alice's KB"
    assert names(library, "admin") == {"old papers", "alice notes"}, "the admin sees everything"
    for call in (
        lambda: library.search("alice notes", "energy", who="bob"),
        lambda: library.ask("alice notes", "energy", who="bob"),
        lambda: library.documents("alice notes", who="bob"),
        lambda: library.figures("alice notes", who="bob"),
        lambda: library.search(["old papers", "alice notes"], "energy", who="bob"),
    ):
        with pytest.raises(AccessDenied, match="bob may not read"):
            call()
    assert library.search("alice notes", "energy", who="alice").sources


def test_a_reader_asks_but_changes_nothing(library: DocLens) -> None:
    library.share("alice notes", "bob", "reader", who="alice")
    assert library.search("alice notes", "energy", who="bob").sources
    before = [d.file for d in library.documents("alice notes", who="bob")]
    for call in (
        lambda: library.ingest("alice notes", [BUSINESS], who="bob"),
        lambda: library.delete_document("alice notes", PHYSICS.name, who="bob"),
        lambda: library.delete_kb("alice notes", who="bob"),
        lambda: library.rename_kb("alice notes", "bob's now", who="bob"),
        lambda: library.share("alice notes", "carol", "editor", who="bob"),
    ):
        with pytest.raises(AccessDenied, match="bob may not"):
            call()
    assert [d.file for d in library.documents("alice notes", who="alice")] == before
    assert names(library, "carol") == {"old papers"}, "nothing was shared by the refused call"
    assert library.role("alice notes", "bob") == "reader"


def test_an_editor_changes_documents_but_not_the_kb(library: DocLens) -> None:
    library.share("alice notes", "carol", "editor", who="alice")
    assert all(r.ok for r in library.ingest("alice notes", [BUSINESS], who="carol"))
    entry = library.delete_document("alice notes", BUSINESS.name, who="carol")
    assert entry.id in {e.id for e in library.trash_entries("carol")}, "an editor may restore a document"
    library.restore(entry.id, who="carol")
    library.delete_document("alice notes", BUSINESS.name, who="carol")
    with pytest.raises(AccessDenied, match="carol may not manage"):
        library.delete_kb("alice notes", who="carol")
    with pytest.raises(AccessDenied, match="only the admin"):
        library.empty_trash(who="carol")


def test_everyone_and_taking_a_share_back(library: DocLens) -> None:
    library.create_kb("team", who="alice")
    assert "team" not in names(library, "carol")
    library.share("team", "*", "reader", who="alice")
    assert "team" in names(library, "carol") and library.role("team", "carol") == "reader"
    library.share("team", "*", "none", who="alice")
    assert "team" not in names(library, "carol")
    with pytest.raises(AccessDenied, match="not a login"):
        library.share("team", "mallory", "reader", who="alice")
    with pytest.raises(AccessDenied, match="reader, editor or none"):
        library.share("team", "bob", "owner", who="alice")
    assert library.access("team", who="alice") == {"owner": "alice", "shares": {}}


def test_old_kbs_are_the_admins_and_everyones_as_editors(library: DocLens) -> None:
    assert library.access("old papers", who="bob") == {"owner": "admin", "shares": {"*": "editor"}}
    assert library.role("old papers", "bob") == "editor"
    with pytest.raises(AccessDenied, match="bob may not manage"):
        library.delete_kb("old papers", who="bob")
    assert library.role("old papers", "admin") == "owner"


def test_a_call_that_names_no_login_gets_nothing(library: DocLens) -> None:
    """With logins on, a call that passes no login (the default "local") is refused, not let through."""
    assert names(library, "local") == set()
    with pytest.raises(AccessDenied):
        library.search("old papers", "market")


def test_owner_and_shares_follow_a_rename_and_a_restore(library: DocLens) -> None:
    library.create_kb("drafts", who="alice")
    library.share("drafts", "bob", "reader", who="alice")
    library.rename_kb("drafts", "drafts 2026", who="alice")
    assert library.role("drafts 2026", "bob") == "reader"
    entry = library.delete_kb("drafts 2026", who="alice")
    assert entry is not None
    assert entry.id not in {e.id for e in library.trash_entries("bob")}, "a reader cannot restore a KB"
    with pytest.raises(AccessDenied):
        library.restore(entry.id, who="bob")
    library.restore(entry.id, who="alice")
    assert library.role("drafts 2026", "bob") == "reader" and library.role("drafts 2026", "alice") == "owner"
    audit = [line["what"] for line in library.trash.audit.lines()]
    assert "share_kb" in audit


def test_without_logins_one_user_may_do_everything(fresh_service: DocLens) -> None:
    fresh_service.create_kb("mine", who="alice")  # no logins: nobody owns it
    assert fresh_service.role("mine", "local") == "owner"
    assert [kb.name for kb in fresh_service.list_kbs()] == ["mine"]
    fresh_service.delete_kb("mine")


def test_the_roles_refuse_a_login_named_as_doclens_s_own_user(fresh_service: DocLens) -> None:
    """The web app refuses such logins when it starts (ui/access); the roles do not rely on it: "cli" and
    "resume" may do everything by name."""
    for name in ("cli", "Resume", "local"):
        with pytest.raises(AccessDenied, match="reserved"):
            fresh_service.roles.configure(["alice", name], "alice")
    assert not fresh_service.roles.enforced  # nothing was configured
