"""Roles per knowledge base with logins on (issue 27 items 3 and 5), on an app of its own with three logins
(``admin`` the admin): the owner shares a KB as reader; the reader finds it, asks, sees no upload or delete
controls, and its API calls through gradio_client are refused with nothing changed. Real browser (Debian
chromium + Playwright), real app, real PDFs. Outside CI skipped when /usr/bin/chromium is missing."""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.ui.browser_support import (
    choose,
    dropdown_options,
    field,
    new_kb_with,
    open_tab,
    skip_without_chromium,
    wait_idle,
)
from tests.ui.conftest import SAMPLE_PDF, RunningApp, running_app

pytestmark = pytest.mark.slow
skip_without_chromium()

LOGINS = {"admin": "root-pass", "alice": "alice-pass", "bob": "bob-pass"}
KB = "alice papers"


@pytest.fixture(scope="module")
def roles_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningApp]:
    auth = " ".join(f"{user}:{password}" for user, password in LOGINS.items())
    with running_app(tmp_path_factory.mktemp("roles-data"), "roles-app.log", DOCLENS_AUTH=auth) as app:
        yield app


def client(app: RunningApp, user: str):
    from gradio_client import Client

    return Client(app.url, auth=(user, LOGINS[user]), verbose=False)


def log_in(page, url: str, user: str) -> None:
    page.goto(url)
    page.locator("input[type=text], input[name=username]").first.fill(user)
    page.locator("input[type=password]").first.fill(LOGINS[user])
    page.keyboard.press("Enter")
    page.locator("#chatbot").wait_for(timeout=60_000)
    wait_idle(page)


def test_a_readers_api_calls_are_refused_and_change_nothing(roles_app: RunningApp) -> None:
    from gradio_client import handle_file

    alice, bob = client(roles_app, "alice"), client(roles_app, "bob")
    alice.predict("api private", api_name="/create_kb")
    assert [r["status"] for r in alice.predict("api private", [handle_file(str(SAMPLE_PDF))], api_name="/upload")] == [
        "indexed"
    ]
    assert "api private" not in [kb["name"] for kb in bob.predict(api_name="/list_kbs")], "private until shared"
    with pytest.raises(Exception, match="bob may not read"):
        bob.predict("api private", "energy?", api_name="/search")
    alice.predict("api private", "bob", "reader", api_name="/share")
    assert bob.predict("api private", "What is the key formula?", api_name="/ask")["sources"]
    with pytest.raises(Exception, match="bob may not change the documents"):
        bob.predict("api private", [handle_file(str(SAMPLE_PDF))], api_name="/upload")
    with pytest.raises(Exception, match="bob may not manage"):
        bob.predict("api private", api_name="/delete_kb")
    with pytest.raises(Exception, match="bob may not manage"):
        bob.predict("api private", "bob", "editor", api_name="/share")
    assert [d["file"] for d in alice.predict("api private", api_name="/documents")] == [SAMPLE_PDF.name]
    assert bob.predict("api private", api_name="/access")["role"] == "reader"
    assert alice.predict("api private", api_name="/access") == {
        "owner": "alice",
        "shares": {"bob": "reader"},
        "role": "owner",
    }


def test_the_owner_shares_as_reader_and_the_reader_only_asks(roles_app: RunningApp, browsers) -> None:
    owner = browsers()
    log_in(owner, roles_app.url, "alice")
    new_kb_with(owner, roles_app.url, KB, SAMPLE_PDF)  # the login's cookie stays
    owner.locator("#kb-sharing").get_by_text("Sharing").first.click()
    assert "Owner: alice" in owner.locator("#kb-access").inner_text()
    field(owner, "kb-share-login").fill("bob")
    owner.locator("#kb-share-role").get_by_text("reader").click()
    owner.locator("#kb-share").click()
    owner.locator("#kb-share-status").get_by_text("Shared").wait_for()
    assert "bob (reader)" in owner.locator("#kb-access").inner_text()

    reader = browsers()
    log_in(reader, roles_app.url, "bob")
    assert reader.locator("#chat-empty").is_hidden(), "bob may read a KB: no 'create a knowledge base' panel"
    open_tab(reader, "Knowledge base")
    wait_idle(reader)
    assert KB in dropdown_options(reader, "kb-active")
    choose(reader, "kb-active", KB)
    wait_idle(reader)
    for control in ("#upload-files", "#kb-delete", "#kb-rename", "#doc-delete"):
        assert reader.locator(control).is_hidden(), f"a reader sees {control}"
    reader.locator("#kb-sharing").get_by_text("Sharing").first.click()
    assert "you: reader" in reader.locator("#kb-access").inner_text()
    open_tab(reader, "Chat")
    wait_idle(reader)
    choose(reader, "kb-select", KB)
    wait_idle(reader)
    field(reader, "question").fill("What is the key formula?")
    reader.locator("#send").click()
    reader.wait_for_function(
        "(name) => document.querySelector('#sources')?.innerText.includes(name)", arg=SAMPLE_PDF.name, timeout=90_000
    )
    wait_idle(reader)
