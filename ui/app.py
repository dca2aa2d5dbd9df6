"""The DocLens web app: three tabs over one ``DocLens`` service, started by ``python main.py serve``."""

from __future__ import annotations

import logging
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import gradio as gr

from backend.service import START_STEP, DocLens
from backend.settings import Settings
from ui.access import Access
from ui.api import register_api
from ui.browser_storage import BROWSER_ID_KEY, CURRENT_KB_KEY, restore_js
from ui.chat.handlers import ChatHandlers
from ui.chat.page import ChatTab, build_chat_tab, chain_panel, empty_state_of
from ui.common import UNDOCUMENTED, no_matplotlib_probe, queue_events
from ui.i18n.strings import (
    RESTORE_LOCALE_JS,
    SWITCH_LOCALE_JS,
    bi,
    label,
    lang_of,
    set_language,
    set_session_language,
    text,
    translations,
)
from ui.knowledge_bases.handlers import KBHandlers
from ui.knowledge_bases.page import KBTab, build_kb_tab
from ui.knowledge_bases.upload_jobs import UploadJobs, resume_interrupted
from ui.settings.page import SettingsFields, build_settings_tab
from ui.starting_page import StartingPage
from ui.web_files import ReceivedUploads, shown_files

log = logging.getLogger(__name__)

ASSETS = Path(__file__).resolve().parent.parent / "assets"
STYLE_PATH = ASSETS / "style.css"
SCRIPT_PATH = ASSETS / "doclens.js"
LOGO_PATH = ASSETS / "logo.svg"
FIRST_RUN_MARKER = ".doclens-initialized"
MODEL_DELAY_S = 6.0
# The Chat tab shown: its Refresh pressed, once the page's load has put this browser's KB in the picker.
MARK_LOADED_JS = "() => { window.doclensLoaded = true; }"
REFRESH_WHEN_LOADED_JS = "() => { if (window.doclensLoaded) document.getElementById('chat-refresh')?.click(); }"


def theme() -> gr.themes.Base:
    return gr.themes.Soft(
        primary_hue="indigo",
        secondary_hue="slate",
        neutral_hue="slate",
        font=["system-ui", "Segoe UI", "Helvetica Neue", "Arial", "PingFang SC", "Microsoft YaHei", "sans-serif"],
    ).set(block_radius="10px")


def launch_style() -> dict[str, Any]:
    """Theme, CSS, the page script and the translations: Gradio 6 takes them in launch() (or
    mount_gradio_app), not in Blocks(). Call after build_app: the translations are collected while building."""
    css = STYLE_PATH.read_text(encoding="utf-8") if STYLE_PATH.exists() else ""
    script = SCRIPT_PATH.read_text(encoding="utf-8") if SCRIPT_PATH.exists() else None
    return {"theme": theme(), "css": css, "js": script, "i18n": translations()}


def header_html() -> str:
    logo = LOGO_PATH.read_text(encoding="utf-8") if LOGO_PATH.exists() else ""
    tagline = label("Ask questions across your PDF libraries", "跨 PDF 文库问答")
    return (
        f'<div class="dl-header"><span class="dl-logo">{logo}</span><div><div class="dl-title">DocLens</div>'
        f'<div class="dl-tagline">{tagline}</div></div></div>'
    )


def preparation_step(lang: str, step: str) -> str:
    """What a step of the model preparation (backend/embedding/preparation.py) does, in the user's words."""
    steps = {
        "bundled:read": text(lang, "reading the bundled 4-bit weights", "读取内置的 4 位权重"),
        "bundled:write": text(lang, "writing the full model", "写出完整模型"),
        "bundled:package": text(lang, "packaging it for sentence-transformers", "打包为 sentence-transformers 模型"),
        "int8:export": text(lang, "exporting it to OpenVINO", "导出为 OpenVINO 模型"),
        "int8:quantize": text(lang, "quantizing it to int8", "量化为 int8"),
        "int8:save": text(lang, "saving the int8 model", "保存 int8 模型"),
        "onnxruntime:export": text(lang, "exporting it to ONNX", "导出为 ONNX 模型"),
        "onnxruntime:fuse": text(lang, "fusing its attention layers", "融合注意力层"),
        "onnxruntime:quantize": text(lang, "quantizing it to int8", "量化为 int8"),
        "q4:read": text(lang, "reading the bundled 4-bit weights", "读取内置的 4 位权重"),
        "q4:tokenizer": text(lang, "writing the tokenizer", "写出分词器"),
        "q4:write": text(lang, "writing the 4-bit ONNX model", "写出 4 位 ONNX 模型"),
        START_STEP: text(lang, "starting", "开始"),
    }
    return steps.get(step, text(lang, "loading the model", "加载模型"))


def model_banner(service: DocLens, request: gr.Request = None) -> tuple[Any, Any]:
    """While the embedding model is prepared: its current step, how far along (the builds report their
    steps) and for how long. Outputs: banner, timer."""
    from ui.knowledge_bases.view import progress_html

    state = service.model_state
    if not state.preparing:
        return gr.update(value="", visible=False), gr.update(active=False)
    lang = lang_of(request)
    line = text(
        lang,
        "Preparing the embedding model: {step} ({s:.0f} s so far; the first start builds it once, "
        "which takes a few minutes). You can create knowledge bases meanwhile; uploads wait in line and "
        "start when it is ready.",
        "正在准备向量模型：{step}（已 {s:.0f} 秒；首次启动需构建一次，约需几分钟）。期间可以创建知识库；"
        "上传会排队，准备好后自动开始。",
    ).format(step=preparation_step(lang, state.step), s=state.seconds)
    # Loading a cached model reports no fraction: a moving stripe then, never a made-up percentage.
    return gr.update(value=progress_html(state.fraction, line), visible=True), gr.update(active=True)


def tab_labels(request: gr.Request) -> tuple[Any, Any, Any]:
    lang = lang_of(request)
    return (
        gr.Tab(label=text(lang, "Chat", "问答")),
        gr.Tab(label=text(lang, "Knowledge base", "知识库")),
        gr.Tab(label=text(lang, "Settings", "设置")),
    )


def build_app(service: DocLens, admin: str = "") -> gr.Blocks:
    """The whole UI over one service; tests mount or launch it themselves. ``admin``: the login that may
    change server-wide settings (see ui/settings/page.py)."""
    set_language(service.settings.ui.language)
    start_first_run(service)
    chat_handlers = ChatHandlers(service)
    with gr.Blocks(title="DocLens", analytics_enabled=False, fill_width=True) as demo:
        uploads = ReceivedUploads(demo)  # only what this app's /upload received may be ingested
        kb_handlers = KBHandlers(service, uploads)
        llm_profile = gr.State(None)  # this session's own model profile (Settings tab), None: the server's
        gr.HTML(header_html(), elem_id="dl-header")
        language = gr.Radio(
            [("English", "en"), ("中文", "zh")],
            value=None,
            label=label("Language", "语言"),
            show_label=False,
            container=False,
            elem_id="language-switch",
        )
        banner = gr.HTML("", visible=False, elem_id="model-banner")
        banner_timer = gr.Timer(2.0, active=False)
        with gr.Tabs(elem_id="dl-tabs") as tabs:
            with gr.Tab(label("Chat", "问答"), id="chat", elem_id="tab-chat") as chat_tab:
                chat = build_chat_tab(service, chat_handlers, llm_profile)
            with gr.Tab(label("Knowledge base", "知识库"), id="kb", elem_id="tab-kb") as kb_tab:
                kb = build_kb_tab(service, kb_handlers)
            with gr.Tab(label("Settings", "设置"), id="settings", elem_id="tab-settings") as settings_tab:
                settings_fields = build_settings_tab(service, llm_profile, admin)
        register_api(service, uploads)
        wire_cross_tab(chat_handlers, chat, kb)
        wire_tab_refresh(service, chat_handlers, chat, kb, chat_tab, kb_tab, tabs)
        tab_list = [chat_tab, kb_tab, settings_tab]
        page = Page(service, chat_handlers, chat, kb, settings_fields, language, tab_list, banner, banner_timer)
        wire_page_load(demo, page)
        wire_language_switch(page)
    demo.doclens_uploads = uploads  # serve() deletes what is left of the uploads when it stops
    demo.doclens_jobs = kb_handlers.jobs  # serve() resumes the uploads a restart cut short as jobs
    return demo


@dataclass
class Page:
    """What the page-wide events (a load, the language switch) write to."""

    service: DocLens
    chat_handlers: ChatHandlers
    chat: ChatTab
    kb: KBTab
    settings_fields: SettingsFields
    language: gr.Radio
    tabs: list[gr.Tab]
    banner: gr.HTML
    banner_timer: gr.Timer


def wire_page_load(demo: gr.Blocks, page: Page) -> None:
    """What a page (re)load runs, in order: its language with the model banner, an upload's progress, the
    settings and the tab labels; then both tabs' lists; then the figures and the summary."""
    service, chat, kb = page.service, page.chat, page.kb

    def banner_update(request: gr.Request) -> tuple[Any, Any]:
        return model_banner(service, request)

    def first_banner(request: gr.Request) -> tuple[Any, Any]:
        service.prepare_models_in_background()  # once the first page is drawn, if its delay has not run out
        return model_banner(service, request)

    banner_outputs = [page.banner, page.banner_timer]
    page.banner_timer.tick(
        banner_update, None, banner_outputs, api_name="model_banner_tick", show_progress="hidden", **UNDOCUMENTED
    )
    # The language, the current KB and the browser's id, read from its local storage before anything asks.
    # Each event costs the browser a pass over all the page's components: the first step also writes what
    # needs no knowledge base (the banner first: on a first start the build holds both cores and every
    # later step waits; a reload mid-upload's progress, from the KB this browser last used).
    kept = [page.language, chat.last_kb, kb.browser]
    fields = page.settings_fields
    located = demo.load(
        session_restorer(page, first_banner),
        [*kept, fields.profile],
        [*kept, *banner_outputs, *kb.upload_progress, *fields.fields, *page.tabs],
        js=restore_js(RESTORE_LOCALE_JS, [CURRENT_KB_KEY, BROWSER_ID_KEY], made=[BROWSER_ID_KEY]),
        api_name="page_language",
        queue=False,
        **UNDOCUMENTED,
    )
    # Both tabs' lists in one step: each event costs the browser a pass over all the page's components.
    loaded = located.then(
        lists_on_load(page),
        [chat.last_kb, chat.doc_filter, kb.browser],
        [chat.kb_select, chat.doc_filter, *chat.fresh_view, chat.empty_state, *kb.lists, *kb.upload_progress],
        api_name="page_load",
        **UNDOCUMENTED,
    )
    loaded.then(None, None, None, js=MARK_LOADED_JS, queue=False, **UNDOCUMENTED)
    chain_panel(loaded, page.chat_handlers, chat, "page_load")


def lists_on_load(page: Page) -> Callable[..., tuple]:
    """The page's load, once the browser's KB is known: the Chat tab's pickers, its conversation view in the
    session's language (the layout is built before a session has one) and empty state, and the Knowledge
    base tab's lists and upload progress, all on that KB (or the first one when it is gone)."""
    chat, kb = page.chat_handlers, page.kb.handlers

    def load(current: Optional[str], doc_filter: Any, browser: Optional[str], request: gr.Request) -> tuple:
        kb_update, doc_update = chat.refresh_choices(current, doc_filter, request)  # the one read of the KB list
        empty_state = gr.update(visible=not kb_update["choices"])
        # A copy for the other tab: Gradio takes the value out of an update it is given.
        kb_tab = kb.shown_with(dict(kb_update), browser, request)
        return (kb_update, doc_update, *chat.clear(request), empty_state, *kb_tab)

    return load


def session_restorer(page: Page, banner: Callable[[gr.Request], tuple]) -> Callable[..., tuple]:
    """The page's load: the session's language; what the browser kept, back into the page; the model's
    banner; the progress of this browser's upload into the KB it last used; the settings and tab labels in
    the session's language (``settings_and_tabs``)."""
    kb = page.kb.handlers
    settings_and_tabs = settings_and_tabs_of(page)

    def restore(
        language: Optional[str], current: Optional[str], browser: Optional[str], profile: Any, request: gr.Request
    ) -> tuple:
        language = set_session_language(language, request)  # first: what follows is in that language
        current, browser = current or None, browser or None
        progress = kb.attach(current, browser, request)
        return (language, current, browser, *banner(request), *progress, *settings_and_tabs(profile, request))

    return restore


def settings_and_tabs_of(page: Page) -> Callable[..., tuple]:
    """The settings form's values, then the three tab labels, in the session's language (Gradio re-translates
    only the shown tab's label after a locale change). Outputs: the settings fields, the tabs."""
    fields = page.settings_fields

    def settings_and_tabs(profile: Any, request: gr.Request) -> tuple:
        return (*fields.handlers.page_values(profile, request), *tab_labels(request))

    return settings_and_tabs


def write_in_language(event: Any, page: Page, name: str) -> None:
    """After ``event`` (the language switch): what the server writes in the session's language."""
    empty = empty_state_of(page.service)
    event.then(empty, None, page.chat.empty_state, api_name=f"{name}_empty", **UNDOCUMENTED)
    fields = page.settings_fields
    outputs = [*fields.fields, *page.tabs]
    event.then(settings_and_tabs_of(page), fields.profile, outputs, api_name=f"{name}_settings", **UNDOCUMENTED)


def wire_language_switch(page: Page) -> None:
    """The switch, in place (no reload; the tab shown and the conversation stay): Gradio's locale changes
    in the browser (SWITCH_LOCALE_JS), the session's handlers answer in the new language, and what the
    server wrote is written again in it; what a handler said last is blanked rather than left in the other
    language."""
    switched = page.language.input(
        set_session_language,
        page.language,
        page.language,
        js=SWITCH_LOCALE_JS,
        api_name="switch_language",
        queue=False,
        **UNDOCUMENTED,
    )
    notices = [*page.kb.notices, page.settings_fields.status]
    # One update each: Gradio consumes an update dict as it applies it, so a shared one blanks only the first.
    switched.then(
        lambda: [gr.update(value="") for _ in notices],
        None,
        notices,
        api_name="switch_blank",
        queue=False,
        **UNDOCUMENTED,
    )
    chat = page.chat
    switched.then(
        page.chat_handlers.panel_again, chat.last_sources, chat.side_panel, api_name="switch_panel", **UNDOCUMENTED
    )
    page.kb.follow(switched, page.kb.kb_active, "switch_kb")
    page.kb.show_trash(switched, "switch")
    write_in_language(switched, page, "switch")


def wire_cross_tab(handlers: ChatHandlers, chat: ChatTab, kb: KBTab) -> None:
    """Both tabs show the same active knowledge base; KB changes refresh the Chat tab's pickers."""
    for index, event in enumerate(kb.changed):
        refreshed = event.then(
            handlers.refresh_choices,
            [kb.kb_active, chat.doc_filter],
            [chat.kb_select, chat.doc_filter],
            api_name=f"chat_refresh_{index}",
            **UNDOCUMENTED,
        )
        chain_panel(refreshed, handlers, chat, f"chat_refresh_{index}")
    picked = chat.kb_select.input(None, None, None, api_name="chat_sync_kb", **UNDOCUMENTED)  # in the browser alone
    kb.follow(picked, chat.kb_select, "chat_sync_kb")


def wire_tab_refresh(
    service: DocLens, handlers: ChatHandlers, chat: ChatTab, kb: KBTab, chat_tab: gr.Tab, kb_tab: gr.Tab, tabs: gr.Tabs
) -> None:
    """Knowledge bases made elsewhere (another tab, another browser, the API) appear when a tab is shown
    or on Refresh, without a reload."""
    empty_state = empty_state_of(service)

    def refresh(kb: Optional[str], doc_filter: Any, request: gr.Request) -> tuple:
        return (*handlers.refresh_choices(kb, doc_filter, request), empty_state(request))

    refreshed = chat.refresh.click(
        refresh,
        [chat.kb_select, chat.doc_filter],
        [chat.kb_select, chat.doc_filter, chat.empty_state],
        api_name="chat_refresh_button",
        **UNDOCUMENTED,
    )
    chain_panel(refreshed, handlers, chat, "chat_refresh_button")
    # Gradio selects the first tab as the page mounts, before the load has put the browser's KB in the
    # picker: a refresh then would ask with the picker's first value and, answering last, put it back.
    chat_tab.select(None, None, None, js=REFRESH_WHEN_LOADED_JS, queue=False, **UNDOCUMENTED)
    kb_shown = kb_tab.select(None, None, None, api_name="kb_tab_shown", **UNDOCUMENTED)  # in the browser alone
    kb.follow(kb_shown, chat.kb_select, "kb_tab_shown")
    chat.go_to_kb.click(
        lambda: gr.Tabs(selected="kb"), None, tabs, api_name="chat_empty_go", queue=False, **UNDOCUMENTED
    )


def start_first_run(service: DocLens) -> Optional[threading.Thread]:
    """On a fresh install (no knowledge base, never started before) create an empty default one, as the
    original system did. In the background: creating it waits for the embedding model."""
    marker = service.settings.data_dir / FIRST_RUN_MARKER
    if marker.exists():
        return None
    if service.has_kbs():  # any at all, whoever may read them
        marker.touch()
        return None
    name = "默认知识库" if service.settings.ui.language == "zh" else "Default"

    def create() -> None:
        try:
            service.create_kb(name)
            marker.touch()
        except Exception as exc:  # the user can still create one by hand
            log.warning("could not create the default knowledge base %r: %s", name, exc)

    thread = threading.Thread(target=create, name="doclens-first-run", daemon=True)
    thread.start()
    return thread


def serve(settings: Settings, access: Access, service: DocLens, starting: Optional[StartingPage] = None) -> None:
    """Start the web app and block until it stops (``access``: checked by ui.access.checked_access).
    ``service``: its knowledge bases loading in the background (``DocLens.load_all_in_background``) so that a
    large library does not hold back the page; its models are prepared from here on; closed here.
    ``starting``: the placeholder holding the port meanwhile (ui/starting_page.py), stopped just before
    the app binds it."""
    demo = None
    try:
        # With logins every call is checked against the login's role on the knowledge base (issue 27).
        service.roles.configure([user for user, _ in access.logins or []], access.admin)
        demo = build_app(service, access.admin)
        # After the first page is drawn (its load starts it) or MODEL_DELAY_S after the launch: loading the
        # model takes both cores for seconds, and the browser drawing the first page needs them more.
        delayed = threading.Timer(MODEL_DELAY_S, service.prepare_models_in_background)
        delayed.daemon = True
        delayed.start()
        resume_uploads_later(service, demo.doclens_jobs)
        queue_events(demo, settings.ui.concurrency)
        no_matplotlib_probe()
        stop_on_sigterm()
        log.info("DocLens web app on http://%s:%d", access.host, access.port)
        if starting is not None:
            starting.stop()
        # No allowed_paths: nothing under the data folder is served; shown images go through ui/web_files.py.
        demo.launch(
            server_name=access.host,
            server_port=access.port,
            auth=access.logins,
            footer_links=["api"],
            show_error=False,
            max_file_size=int(settings.ingest.max_file_mb * 1024 * 1024),  # refused before it is stored
            favicon_path=LOGO_PATH if LOGO_PATH.exists() else None,
            auth_message=bi("DocLens login", "DocLens 登录"),
            **launch_style(),
        )
    finally:
        if starting is not None:
            starting.stop()
        if demo is not None:
            demo.doclens_uploads.discard_all()
        shown_files().clear()
        service.close()


def resume_uploads_later(service: DocLens, jobs: UploadJobs) -> None:
    """Uploads a kill or a restart cut short go on by themselves, from the pages they had read, after the
    first page is drawn (as the models: MODEL_DELAY_S). Their jobs are there at once, so a page opened
    meanwhile shows them queued and follows them; each shows up in its KB once it is complete."""

    def resume() -> None:
        try:
            resume_interrupted(service, jobs, delay=MODEL_DELAY_S)
        except Exception:
            log.exception("could not resume the interrupted uploads")

    threading.Thread(target=resume, name="doclens-resume-uploads", daemon=True).start()


def stop_on_sigterm() -> None:
    """``kill`` (SIGTERM) stops like Ctrl+C, so the cleanup in ``serve`` runs."""

    def interrupt(signum, frame) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, interrupt)
