"""``main.py share KB [LOGIN ROLE]``: who may read or change a knowledge base when the web app has logins
(issue 27 item 3). Without LOGIN it prints the owner and the shares; with them it shares the knowledge base
with LOGIN (or ``*``, everyone) as reader or editor, or takes the share back (``none``). The command line
runs on the server's machine and may do everything, as the admin login does."""

from __future__ import annotations

from backend.errors import DocLensError
from backend.settings import Settings
from ui.access import parse_logins
from ui.cli.output import CLI_USER, emit_json, open_service


def add_share_command(sub, common) -> None:
    p = sub.add_parser("share", parents=[common], help="who may read or change a knowledge base (with logins)")
    p.add_argument("kb", metavar="KB", help="the knowledge base")
    p.add_argument("login", metavar="LOGIN", nargs="?", help="a login of DOCLENS_AUTH, or * for everyone")
    p.add_argument(
        "role", metavar="ROLE", nargs="?", choices=["reader", "editor", "none"], help="reader, editor or none"
    )
    p.set_defaults(handler=cmd_share)


def cmd_share(args, settings: Settings) -> int:
    if bool(args.login) != bool(args.role):
        raise DocLensError("give both a LOGIN and a ROLE (reader, editor or none), or neither to list the shares")
    secret = settings.ui.auth.get_secret_value() if settings.ui.auth else None
    logins = [user for user, _ in parse_logins(secret) or []]
    with open_service(settings) as service:
        service.roles.configure(logins, settings.ui.admin, enforced=False)
        if args.login:
            grant = service.share(args.kb, args.login, args.role, who=CLI_USER)
        else:
            grant = service.access(args.kb, who=CLI_USER)
    emit_json({"kb": args.kb.strip(), **grant})
    return 0
