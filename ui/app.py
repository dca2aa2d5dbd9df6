"""The DocLens web app: three tabs over one ``DocLens`` service, started by ``python main.py serve``."""

from __future__ import annotations

import logging
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

log = logging.getLogger("doclens.ui")

ASSETS = Path(__file__).resolve().parent.parent / "assets"
STYLE_PATH = ASSETS / "style.css"
LOGO_PATH = ASSETS / "logo.svg"


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


def build_app(service: DocLens) -> gr.Blocks:
    """The whole UI over one service; tests mount or launch it themselves."""
    set_language(service.settings.ui.language)
    with gr.Blocks(title="DocLens", analytics_enabled=False, fill_width=True) as demo:
        gr.HTML(header_html(), elem_id="dl-header", js_on_load=None)
        with gr.Tabs(elem_id="dl-tabs"):
            with gr.Tab(bi("Chat", "问答"), id="chat", elem_id="tab-chat"):
                chat = build_chat_tab(service)
            with gr.Tab(bi("Knowledge base", "知识库"), id="kb", elem_id="tab-kb"):
                kb = build_kb_tab(service)
            with gr.Tab(bi("Settings", "设置"), id="settings", elem_id="tab-settings"):
                settings_fields = build_settings_tab(service)
        register_api(service)
        wire_cross_tab(ChatHandlers(service), chat, kb)
        loaded = demo.load(ChatHandlers(service).refresh_choices, [chat.kb_select, chat.doc_filter],
                           [chat.kb_select, chat.doc_filter], api_name="page_load", api_visibility="undocumented")
        chain_panel(loaded, ChatHandlers(service), chat, "page_load")
        kb.follow(loaded, chat.kb_select, "page_load_kb")
        demo.load(settings_fields.handlers.current_values, None, settings_fields.fields,
                  api_name="page_load_settings", api_visibility="undocumented")
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


def serve(settings: Settings, host: Optional[str] = None, port: Optional[int] = None,
          auth: Optional[str] = None) -> None:
    """Start the web app and block until it stops. Binds 127.0.0.1 unless a host is given explicitly."""
    secret = settings.ui.auth.get_secret_value() if settings.ui.auth else None
    login = parse_auth(auth or secret)
    host = host or settings.ui.host
    port = port or settings.ui.port
    if host not in ("127.0.0.1", "localhost", "::1") and login is None:
        log.warning("serving on %s without a login: anyone who can reach this address can use DocLens "
                    "(set DOCLENS_AUTH=user:password)", host)
    service = DocLens(settings)
    try:
        service.load_all()
        service.prepare_models_in_background()
        demo = build_app(service)
        demo.queue(default_concurrency_limit=4)
        log.info("DocLens web app on http://%s:%d", host, port)
        demo.launch(server_name=host, server_port=port, auth=login, footer_links=["api"], show_error=False,
                    allowed_paths=[str(settings.data_dir)], favicon_path=LOGO_PATH if LOGO_PATH.exists() else None,
                    auth_message=bi("DocLens login", "DocLens 登录"), **launch_style())
    finally:
        service.close()
