"""The DocLens web app: three tabs over one ``DocLens`` service, started by ``python main.py serve``."""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path
from typing import Any, Optional

import gradio as gr

from backend.errors import SettingsError
from backend.service import DocLens
from backend.settings import Settings
from ui.api import register_api
from ui.chat_tab import ChatHandlers, build_chat_tab, chain_panel
from ui.common import bi, set_language
from ui.kb_tab import build_kb_tab
from ui.settings_tab import build_settings_tab
from ui.web_files import ReceivedUploads, shown_files

log = logging.getLogger("doclens.ui")

ASSETS = Path(__file__).resolve().parent.parent / "assets"
STYLE_PATH = ASSETS / "style.css"
LOGO_PATH = ASSETS / "logo.svg"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def theme() -> gr.themes.Base:
    return gr.themes.Soft(primary_hue="indigo", secondary_hue="slate", neutral_hue="slate",
                          font=["system-ui", "Segoe UI", "Helvetica Neue", "Arial", "PingFang SC",
                                "Microsoft YaHei", "sans-serif"]).set(block_radius="10px")


def launch_style() -> dict[str, Any]:
    """Theme and CSS: Gradio 6 takes them in launch() (or mount_gradio_app), not in Blocks()."""
    css = STYLE_PATH.read_text(encoding="utf-8") if STYLE_PATH.exists() else ""
    return {"theme": theme(), "css": css}


def header_html() -> str:
    logo = LOGO_PATH.read_text(encoding="utf-8") if LOGO_PATH.exists() else ""
    return (f'<div class="dl-header"><span class="dl-logo">{logo}</span><div><div class="dl-title">DocLens</div>'
            f'<div class="dl-tagline">{bi("Ask questions across your PDF libraries", "跨 PDF 文库问答")}</div>'
            f'</div></div>')


def build_app(service: DocLens, admin: str = "") -> gr.Blocks:
    """The whole UI over one service; tests mount or launch it themselves. ``admin``: the login that may
    change server-wide settings (see ui/settings_tab.py)."""
    set_language(service.settings.ui.language)
    with gr.Blocks(title="DocLens", analytics_enabled=False, fill_width=True) as demo:
        uploads = ReceivedUploads(demo)  # only what this app's /upload received may be ingested
        llm_profile = gr.State(None)  # this session's own model profile (Settings tab), None: the server's
        gr.HTML(header_html(), elem_id="dl-header", js_on_load=None)
        with gr.Tabs(elem_id="dl-tabs"):
            with gr.Tab(bi("Chat", "问答"), id="chat", elem_id="tab-chat"):
                chat = build_chat_tab(service, llm_profile)
            with gr.Tab(bi("Knowledge base", "知识库"), id="kb", elem_id="tab-kb"):
                kb = build_kb_tab(service, uploads)
            with gr.Tab(bi("Settings", "设置"), id="settings", elem_id="tab-settings"):
                settings_fields = build_settings_tab(service, llm_profile, admin)
        register_api(service, uploads)
        wire_cross_tab(ChatHandlers(service), chat, kb)
        loaded = demo.load(ChatHandlers(service).refresh_choices, [chat.kb_select, chat.doc_filter],
                           [chat.kb_select, chat.doc_filter], api_name="page_load", api_visibility="undocumented")
        chain_panel(loaded, ChatHandlers(service), chat, "page_load")
        kb.follow(loaded, chat.kb_select, "page_load_kb")
        demo.load(settings_fields.handlers.page_values, settings_fields.profile, settings_fields.fields,
                  api_name="page_load_settings", api_visibility="undocumented")
    demo.doclens_uploads = uploads  # serve() deletes what is left of the uploads when it stops
    return demo


def wire_cross_tab(handlers: ChatHandlers, chat, kb) -> None:
    """Both tabs show the same active knowledge base; KB changes refresh the Chat tab's pickers."""
    for index, event in enumerate(kb.changed):
        refreshed = event.then(handlers.refresh_choices, [kb.kb_active, chat.doc_filter],
                               [chat.kb_select, chat.doc_filter], api_name=f"chat_refresh_{index}",
                               api_visibility="undocumented")
        chain_panel(refreshed, handlers, chat, f"chat_refresh_{index}")
    picked = chat.kb_select.input(lambda: None, None, None, api_name="chat_sync_kb", api_visibility="undocumented",
                                  queue=False)
    kb.follow(picked, chat.kb_select, "chat_sync_kb")


def parse_auth(auth: Optional[str]) -> Optional[tuple[str, str]]:
    if not auth:
        return None
    user, sep, password = auth.partition(":")
    if not sep or not user or not password:
        raise SettingsError("login must look like user:password (--auth or DOCLENS_AUTH)")
    return user, password


def parse_logins(auth: Optional[str]) -> Optional[list[tuple[str, str]]]:
    """``user:pass`` or several separated by spaces (each user may log in; passwords have no spaces)."""
    logins = [parse_auth(part) for part in (auth or "").split()]
    return [login for login in logins if login] or None


def check_exposure(host: str, logins: Optional[list[tuple[str, str]]], insecure: bool, admin: str) -> None:
    """Refuse to serve other machines without a login (unless --insecure), and an admin who cannot log in."""
    if host not in LOOPBACK and logins is None:
        if not insecure:
            raise SettingsError(f"refusing to serve on {host} without a login: anyone who can reach this address "
                                f"could use DocLens. Set DOCLENS_AUTH=user:password (or --auth), or add --insecure "
                                f"if that is really what you want")
        log.warning("serving on %s without a login (--insecure): anyone who can reach this address can use "
                    "DocLens", host)
    if admin and admin not in {user for user, _ in logins or []}:
        raise SettingsError(f"--admin {admin}: no such login (set it in DOCLENS_AUTH or --auth)")


def serve(settings: Settings, host: Optional[str] = None, port: Optional[int] = None,
          auth: Optional[str] = None, admin: Optional[str] = None, insecure: bool = False) -> None:
    """Start the web app and block until it stops. Binds 127.0.0.1 unless a host is given explicitly."""
    secret = settings.ui.auth.get_secret_value() if settings.ui.auth else None
    logins = parse_logins(auth or secret)
    host = host or settings.ui.host
    port = port or settings.ui.port
    admin = admin if admin is not None else settings.ui.admin
    check_exposure(host, logins, insecure, admin)
    service = DocLens(settings)
    demo = None
    try:
        service.load_all()
        service.prepare_models_in_background()
        demo = build_app(service, admin)
        demo.queue(default_concurrency_limit=4)
        stop_on_sigterm()
        log.info("DocLens web app on http://%s:%d", host, port)
        # No allowed_paths: nothing under the data folder is served; shown images go through ui/web_files.py.
        demo.launch(server_name=host, server_port=port, auth=logins, footer_links=["api"], show_error=False,
                    max_file_size=int(settings.ingest.max_file_mb * 1024 * 1024),  # refused before it is stored
                    favicon_path=LOGO_PATH if LOGO_PATH.exists() else None,
                    auth_message=bi("DocLens login", "DocLens 登录"), **launch_style())
    finally:
        if demo is not None:
            demo.doclens_uploads.discard_all()
        shown_files().clear()
        service.close()


def stop_on_sigterm() -> None:
    """``kill`` (SIGTERM) stops like Ctrl+C, so the cleanup in ``serve`` runs."""
    def interrupt(signum, frame) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, interrupt)
