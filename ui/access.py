"""Who may reach the web app: the address it binds and its logins, checked before anything starts."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Optional

from backend.errors import SettingsError
from backend.service import MACHINE_ACTORS
from backend.settings import Settings

log = logging.getLogger(__name__)

LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class Access:
    host: str
    port: int
    logins: Optional[list[tuple[str, str]]]
    admin: str  # the login that may change server-wide settings ("" for nobody)


def checked_access(
    settings: Settings,
    host: Optional[str] = None,
    port: Optional[int] = None,
    auth: Optional[str] = None,
    admin: Optional[str] = None,
    insecure: bool = False,
) -> Access:
    """The command line over the settings; binds 127.0.0.1 unless a host is given explicitly."""
    secret = settings.ui.auth.get_secret_value() if settings.ui.auth else None
    access = Access(
        host=host or settings.ui.host,
        port=port or settings.ui.port,
        logins=parse_logins(auth or secret),
        admin=admin if admin is not None else settings.ui.admin,
    )
    check_exposure(access.host, access.logins, insecure, access.admin)
    return access


def parse_auth(auth: Optional[str]) -> Optional[tuple[str, str]]:
    if not auth:
        return None
    user, sep, password = auth.partition(":")
    if not sep or not user or not password:
        raise SettingsError("login must look like user:password (--auth or DOCLENS_AUTH)")
    if user.strip().lower() in MACHINE_ACTORS:
        raise SettingsError(f"login '{user}' is reserved for DocLens itself; choose another user name")
    return user, password


def parse_logins(auth: Optional[str]) -> Optional[list[tuple[str, str]]]:
    """``user:pass`` or several separated by spaces (each user may log in; passwords have no spaces)."""
    logins = [parse_auth(part) for part in (auth or "").split()]
    return [login for login in logins if login] or None


def check_exposure(host: str, logins: Optional[list[tuple[str, str]]], insecure: bool, admin: str) -> None:
    """Refuse to serve other machines without a login (unless --insecure), and an admin who cannot log in."""
    if host not in LOOPBACK and logins is None:
        if not insecure:
            raise SettingsError(
                f"refusing to serve on {host} without a login: anyone who can reach this address "
                f"could use DocLens. Set DOCLENS_AUTH=user:password (or --auth), or add --insecure "
                f"if that is really what you want"
            )
        log.warning(
            "serving on %s without a login (--insecure): anyone who can reach this address can use DocLens", host
        )
    if admin and admin not in {user for user, _ in logins or []}:
        raise SettingsError(f"--admin {admin}: no such login (set it in DOCLENS_AUTH or --auth)")
