"""The Settings tab's layout (its handlers: ui/settings/handlers.py)."""

from __future__ import annotations

from typing import Any

import gradio as gr

from backend.service import DocLens
from ui.common import UNDOCUMENTED
from ui.i18n.strings import label
from ui.settings.handlers import EMBEDDING_PROVIDERS, OCR_ENGINES, SESSION_NOTE, SettingsHandlers


def build_settings_tab(service: DocLens, profile: gr.State, admin: str = "") -> SettingsFields:
    """Build the tab; the page load fills the note and the fields for this user (``page_values``).
    ``profile``: the session's own LLM profile (None: the server's), shared with the Chat tab."""
    handlers = SettingsHandlers(service, admin)
    values = handlers.current_values()
    note = gr.Markdown(label(*SESSION_NOTE), elem_classes="dl-note", elem_id="settings-scope")
    with gr.Group():
        gr.Markdown(f"#### {label('Language model', '大语言模型')}", elem_classes="dl-section-title")
        with gr.Row():
            llm_url = gr.Textbox(
                label=label("Endpoint (OpenAI-compatible base URL)", "接口地址"),
                value=values[0],
                elem_id="settings-llm-url",
                scale=3,
                min_width=240,
            )
            llm_model = gr.Textbox(
                label=label("Chat model", "对话模型"),
                value=values[1],
                elem_id="settings-llm-model",
                scale=2,
                min_width=160,
            )
            vision_model = gr.Textbox(
                label=label("Vision model (empty: chat model)", "视觉模型（空：同对话模型）"),
                value=values[2],
                elem_id="settings-vision-model",
                scale=2,
                min_width=160,
            )
        with gr.Row(elem_classes="dl-kb-row"):
            llm_key_status = gr.Textbox(
                label=label("API key", "密钥"),
                value=values[3],
                interactive=False,
                elem_id="settings-llm-key-status",
                scale=1,
                min_width=120,
            )
            llm_key = gr.Textbox(
                label=label("New API key (memory only)", "新密钥（仅内存）"),
                type="password",
                elem_id="settings-llm-key",
                scale=2,
                min_width=180,
            )
            test_llm = gr.Button(label("Test chat", "测试对话"), elem_id="settings-test-llm", scale=1, min_width=120)
            test_vision = gr.Button(
                label("Test vision", "测试视觉"), elem_id="settings-test-vision", scale=1, min_width=120
            )
            llm_timeout = gr.Number(
                label=label("Timeout (s)", "超时（秒）"),
                value=values[10],
                elem_id="settings-llm-timeout",
                scale=1,
                min_width=120,
            )
    with gr.Group():
        gr.Markdown(f"#### {label('Embedding', '向量模型')}", elem_classes="dl-section-title")
        with gr.Row():
            provider = gr.Dropdown(
                EMBEDDING_PROVIDERS,
                value=values[4],
                label=label("Provider", "提供方"),
                elem_id="settings-embedding-provider",
                scale=1,
                min_width=240,  # "sentence_transformers" whole, beside the dropdown's arrow
            )
            embedding_model = gr.Textbox(
                label=label("Model", "模型"),
                value=values[5],
                elem_id="settings-embedding-model",
                scale=2,
                min_width=200,
            )
            embedding_url = gr.Textbox(
                label=label("Endpoint (openai provider; empty: the LLM's)", "接口地址"),
                value=values[6],
                elem_id="settings-embedding-url",
                scale=2,
                min_width=200,
            )
        with gr.Row(elem_classes="dl-kb-row"):
            embedding_key_status = gr.Textbox(
                label=label("API key", "密钥"),
                value=values[7],
                interactive=False,
                elem_id="settings-embedding-key-status",
                scale=1,
                min_width=120,
            )
            embedding_key = gr.Textbox(
                label=label("New API key (memory only)", "新密钥（仅内存）"),
                type="password",
                elem_id="settings-embedding-key",
                scale=2,
                min_width=180,
            )
            test_embedding = gr.Button(
                label("Test embedding", "测试向量"), elem_id="settings-test-embedding", scale=1, min_width=140
            )
    with gr.Group():
        gr.Markdown(f"#### {label('OCR and storage', 'OCR 与存储')}", elem_classes="dl-section-title")
        with gr.Row():
            ocr_engine = gr.Dropdown(
                OCR_ENGINES,
                value=values[8],
                label=label("OCR engine", "OCR 引擎"),
                elem_id="settings-ocr-engine",
                scale=1,
                min_width=160,
            )
            milvus_uri = gr.Textbox(
                label=label("Milvus URI (restart to change)", "Milvus 地址（需重启修改）"),
                value=values[9],
                interactive=False,
                elem_id="settings-milvus-uri",
                scale=3,
                min_width=240,
            )
    apply = gr.Button(label("Apply", "应用"), variant="primary", elem_id="settings-apply")
    status = gr.Markdown("", elem_id="settings-status")

    fields = [
        llm_url,
        llm_model,
        vision_model,
        llm_key_status,
        provider,
        embedding_model,
        embedding_url,
        embedding_key_status,
        ocr_engine,
        milvus_uri,
        llm_timeout,
    ]
    apply.click(
        handlers.apply_from_page,
        [
            llm_url,
            llm_model,
            vision_model,
            llm_key,
            provider,
            embedding_model,
            embedding_url,
            embedding_key,
            ocr_engine,
            llm_timeout,
            profile,
        ],
        [status, *fields, llm_key, embedding_key, profile],
        api_name="settings_apply",
        api_visibility="private",
    )
    typed_llm = [llm_url, llm_model, vision_model, llm_key, llm_timeout, profile]  # tested as typed, before Apply
    test_llm.click(handlers.check_llm, typed_llm, status, api_name="settings_test_llm", **UNDOCUMENTED)
    test_vision.click(handlers.check_vision, typed_llm, status, api_name="settings_test_vision", **UNDOCUMENTED)
    test_embedding.click(handlers.check_embedding, None, status, api_name="settings_test_embedding", **UNDOCUMENTED)
    return SettingsFields(handlers, [note, *fields, embedding_key], profile, status)


class SettingsFields:
    """What the page load needs: the handler that reads the live settings, the note and fields it fills
    (``handlers.page_values``) and its input, the session profile."""

    def __init__(self, handlers: SettingsHandlers, fields: list[Any], profile: gr.State, status: gr.Markdown):
        self.handlers = handlers
        self.fields = fields
        self.profile = profile
        self.status = status  # what the last test or apply said; blanked when the language changes
