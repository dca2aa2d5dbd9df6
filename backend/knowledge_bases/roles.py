"""Who may do what to which knowledge base, when the web app has logins (issue 27 item 3).

The login that creates a knowledge base owns it. Its owner (and the admin login) shares it with named logins,
or with everyone (``*``), as reader or editor: readers ask and search, editors also add and delete documents,
owners also rename, share and delete the knowledge base. A knowledge base is private to its owner unless
shared. One without an entry here (made before roles existed, or without logins) belongs to the admin and
is shared with everyone as editors, so nobody loses access by the upgrade.

Without logins (``enforced`` off, the loopback default) there is one user who may do everything; so may the
command line (``cli``) and the trash's retention. The grants live in ``<data_dir>/roles.json``, written
whole to a temporary file and renamed over the old one.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from enum import IntEnum
from pathlib import Path
from typing import Optional

from backend.errors import DocLensError
from backend.knowledge_bases.audit import CLI, LOCAL, MACHINE_ACTORS, RESUME, RETENTION

log = logging.getLogger(__name__)

EVERYONE = "*"
SHARE_ROLES = ("reader", "editor")
UNRESTRICTED = {CLI, RETENTION, RESUME}  # the machine's own user, the purge, the resume: never a web login


class Role(IntEnum):
    NONE = 0
    READER = 1
    EDITOR = 2
    OWNER = 3


NEEDED_FOR = {Role.READER: "read", Role.EDITOR: "change the documents of", Role.OWNER: "manage"}


class AccessDenied(DocLensError):
    """A login asked for what its role on a knowledge base does not allow; nothing was changed."""


class Roles:
    def __init__(self, data_dir: Path):
        self.path = data_dir / "roles.json"
        self.enforced = False  # set by the web app when it has logins
        self.admin = ""  # the login that may do everything ("" for nobody)
        self.logins: set[str] = set()  # who can be named in a share
        self._lock = threading.Lock()

    def configure(self, logins: Optional[list[str]], admin: str, enforced: Optional[bool] = None) -> None:
        """The web app's logins: with any, roles are enforced on every call (``enforced`` False: the command
        line, which may do everything but names only real logins in a share). A login named as DocLens's own
        user is refused here too, whatever let it through: some of those names may do everything."""
        taken = sorted({name for name in logins or [] if name.strip().lower() in MACHINE_ACTORS})
        if taken:
            raise AccessDenied(f"login '{taken[0]}' is reserved for DocLens itself; choose another user name")
        self.enforced = bool(logins) if enforced is None else enforced
        self.logins = set(logins or [])
        self.admin = admin or ""

    # -- reading ------------------------------------------------------------------------------

    def _may_do_everything(self, who: str) -> bool:
        return not self.enforced or who in UNRESTRICTED or bool(self.admin and who == self.admin)

    def role(self, who: str, kb: str) -> Role:
        if self._may_do_everything(who):
            return Role.OWNER
        if who == LOCAL or who not in self.logins:  # a call that named nobody gets nothing
            return Role.NONE
        grant = self._grants().get(kb.strip())
        if grant is None:  # from before roles existed: the admin's, everyone an editor
            return Role.EDITOR
        if grant.get("owner") == who:
            return Role.OWNER
        shares = grant.get("shares", {})
        named = [
            Role.EDITOR if shares.get(name) == "editor" else Role.READER for name in (who, EVERYONE) if name in shares
        ]
        return max(named, default=Role.NONE)

    def require(self, who: str, kb: str, needed: Role) -> None:
        if self.role(who, kb) < needed:
            raise AccessDenied(f"{who} may not {NEEDED_FOR[needed]} knowledge base '{kb.strip()}'")

    def require_admin(self, who: str, action: str) -> None:
        if not self._may_do_everything(who):
            raise AccessDenied(f"only the admin login may {action}")

    def grant(self, kb: str) -> dict:
        """Owner and shares as shown to the user (the default for a knowledge base without an entry)."""
        return self._shown(self._grants().get(kb.strip()))

    def _shown(self, found: Optional[dict]) -> dict:
        if found is None:
            return {"owner": self.admin or "admin", "shares": {EVERYONE: "editor"}}
        return {"owner": found.get("owner", ""), "shares": dict(found.get("shares", {}))}

    # -- changing -----------------------------------------------------------------------------

    def created(self, kb: str, who: str) -> None:
        """A new knowledge base: private to the login that made it (without logins: the default)."""
        with self._lock:
            grants = self._grants()
            if self.enforced and who in self.logins:
                grants[kb.strip()] = {"owner": who, "shares": {}}
            else:
                grants.pop(kb.strip(), None)
            self._save(grants)

    def renamed(self, old: str, new: str) -> None:
        """The grant follows the knowledge base to its new name (a restore under another name too)."""
        with self._lock:
            grants = self._grants()
            if old.strip() in grants:
                grants[new.strip()] = grants.pop(old.strip())
                self._save(grants)

    def share(self, kb: str, with_whom: str, role: str) -> dict:
        """Give ``with_whom`` (a login, or ``*`` for everyone) ``role``: reader, editor, or none (taken back)."""
        name, wanted = (with_whom or "").strip(), (role or "").strip().lower()
        if wanted not in (*SHARE_ROLES, "none"):
            raise AccessDenied(f"a share is reader, editor or none, not '{role}'")
        if name != EVERYONE and name not in self.logins:
            raise AccessDenied(f"'{name}' is not a login of this server (or * for everyone)")
        with self._lock:
            grants = self._grants()
            grant = grants[kb.strip()] = self._shown(grants.get(kb.strip()))
            if name == grant.get("owner"):
                raise AccessDenied(f"{name} owns '{kb.strip()}' already")
            shares = grant.setdefault("shares", {})
            if wanted == "none":
                shares.pop(name, None)
            else:
                shares[name] = wanted
            self._save(grants)
            return {"owner": grant.get("owner", ""), "shares": dict(shares)}

    # -- the file -----------------------------------------------------------------------------

    def _grants(self) -> dict[str, dict]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:  # unreadable: nobody but the admin gets in until it is fixed
            log.error("could not read %s: %s", self.path, exc)
            raise AccessDenied(f"the roles file {self.path.name} is unreadable; the admin must fix it") from None
        return data if isinstance(data, dict) else {}

    def _save(self, grants: dict[str, dict]) -> None:
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_text(json.dumps(grants, ensure_ascii=False, indent=1), encoding="utf-8")
        os.replace(temporary, self.path)
