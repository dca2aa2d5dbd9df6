"""``main.py share KB [LOGIN ROLE]`` as a user runs it (issue 27 item 3): a real process and store; a share
names only logins of DOCLENS_AUTH (or * for everyone), and a KB from before roles is the admin's and
everyone's as editors."""

from __future__ import annotations

import json
from pathlib import Path

from tests.ui.cli.test_commands import run

AUTH = {"DOCLENS_AUTH": "root:pw alice:pw bob:pw", "DOCLENS_UI_ADMIN": "root"}


def test_share_lists_and_changes_who_may_read(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run(["kb", "create", "papers"], data).returncode == 0
    listed = run(["share", "papers"], data, **AUTH)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == {"kb": "papers", "owner": "root", "shares": {"*": "editor"}}
    assert run(["share", "papers", "*", "none"], data, **AUTH).returncode == 0
    shared = run(["share", "papers", "bob", "reader"], data, **AUTH)
    assert shared.returncode == 0, shared.stderr
    assert json.loads(shared.stdout)["shares"] == {"bob": "reader"}
    refused = run(["share", "papers", "mallory", "reader"], data, **AUTH)
    assert refused.returncode != 0 and "not a login of this server" in refused.stderr
    assert run(["share", "papers", "bob"], data, **AUTH).returncode != 0, "a login without a role"
