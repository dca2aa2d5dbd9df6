"""The Settings tab: endpoints and models, connection tests, changes applied without a restart.

Keys are shown only as "set" / "not set". A key typed here lives in this server's memory only.
"""

from __future__ import annotations

import logging
from typing import Any, Optional

import gradio as gr
from pydantic import BaseModel, SecretStr, ValidationError

from backend.service import DocLens
from backend.settings import EmbeddingSettings, OCRSettings, Settings
from ui.common import bi, error_text, warning_md

log = logging.getLogger("doclens.ui")

EMBEDDING_PROVIDERS = list(EmbeddingSettings.model_fields["provider"].annotation.__args__)
OCR_ENGINES = list(OCRSettings.model_fields["engine"].annotation.__args__)


def key_status(secret: Optional[SecretStr]) -> str:
    return bi("set", "已设置") if secret and secret.get_secret_value() else bi("not set", "未设置")


def updated_section(section: BaseModel, changes: dict[str, Any]) -> BaseModel:
    """A validated copy of one settings section; secret fields (excluded from dumps) are carried over."""
    data = {name: getattr(section, name) for name in type(section).model_fields}
    data.update(changes)
    return type(section).model_validate(data)


def new_key(typed: str, current: Optional[SecretStr]) -> Optional[SecretStr]:
    typed = (typed or "").strip()
    return SecretStr(typed) if typed else current


def check_line(name: str, result: tuple[bool, str]) -> str:
    ok, message = result
    return f"{'✅' if ok else '❌'} **{name}**: {message}"


class SettingsHandlers:
    def __init__(self, service: DocLens):
        self.service = service

    def current_values(self) -> tuple:
        """Outputs, in build order: llm url, model, vision model, llm key status, embedding provider,
        model, url, embedding key status, ocr engine, milvus uri."""
        s = self.service.settings
        return (s.llm.base_url, s.llm.model, s.llm.vision_model, key_status(s.llm.api_key), s.embedding.provider,
                s.embedding.model, s.embedding.base_url, key_status(s.embedding.api_key), s.ocr.engine,
                s.milvus_uri)

    def apply(self, llm_url: str, llm_model: str, vision_model: str, llm_key: str, provider: str,
              embedding_model: str, embedding_url: str, embedding_key: str, ocr_engine: str) -> tuple:
        """Outputs: status, then every field of ``current_values``, then both key boxes (cleared)."""
        current = self.service.settings
        try:
            new_settings = current.model_copy(deep=True, update={
                "llm": updated_section(current.llm, {
                    "base_url": (llm_url or "").strip(), "model": (llm_model or "").strip(),
                    "vision_model": (vision_model or "").strip(),
                    "api_key": new_key(llm_key, current.llm.api_key)}),
                "embedding": updated_section(current.embedding, {
                    "provider": provider, "model": (embedding_model or "").strip(),
                    "base_url": (embedding_url or "").strip(),
                    "api_key": new_key(embedding_key, current.embedding.api_key)}),
                "ocr": updated_section(current.ocr, {"engine": ocr_engine}),
            })
            self.service.reconfigure(new_settings)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first.get("loc", ()))
            status = warning_md(f"{where}: {first.get('msg', 'invalid value')}")
            return (status, *self.current_values(), "", "")
        except Exception as exc:
            return (warning_md(error_text(exc, "apply the settings")), *self.current_values(), "", "")
        log.info("settings changed from the web page: %s", _summary(new_settings))
        return (f"✅ {bi('Applied to this server (not saved to disk).', '已应用于本服务器（未写入磁盘）。')}",
                *self.current_values(), "", "")

    def check_llm(self) -> str:
        return self._check(bi("Chat model", "对话模型"), lambda: self.service.check_llm(vision=False))

    def check_vision(self) -> str:
        return self._check(bi("Vision model", "视觉模型"), lambda: self.service.check_llm(vision=True))

    def check_embedding(self) -> str:
        return self._check(bi("Embedding", "向量模型"), self.service.check_embedding)

    @staticmethod
    def _check(name: str, run) -> str:
        try:
            return check_line(name, run())
        except Exception as exc:
            return check_line(name, (False, error_text(exc, "test the connection")))


def _summary(settings: Settings) -> str:
    return (f"llm={settings.llm.base_url or '-'}:{settings.llm.model or '-'} vision={settings.vision_model or '-'} "
            f"embedding={settings.embedding.provider}:{settings.embedding.model} ocr={settings.ocr.engine}")


def build_settings_tab(service: DocLens) -> "SettingsFields":
    """Build the tab; the page load refreshes the returned fields from the live settings."""
    handlers = SettingsHandlers(service)
    values = handlers.current_values()
    gr.Markdown(bi("Changes apply to this running server at once and are not saved. Keys are never shown.",
                   "修改立即作用于当前服务器，不会保存。密钥永不显示。"), elem_classes="dl-note")
    with gr.Group():
        gr.Markdown(f"#### {bi('Language model', '大语言模型')}", elem_classes="dl-section-title")
        with gr.Row():
            llm_url = gr.Textbox(label=bi("Endpoint (OpenAI-compatible base URL)", "接口地址"), value=values[0],
                                 elem_id="settings-llm-url", scale=3, min_width=240)
            llm_model = gr.Textbox(label=bi("Chat model", "对话模型"), value=values[1], elem_id="settings-llm-model",
                                   scale=2, min_width=160)
            vision_model = gr.Textbox(label=bi("Vision model (empty: chat model)", "视觉模型（空：同对话模型）"),
                                      value=values[2], elem_id="settings-vision-model", scale=2, min_width=160)
        with gr.Row(elem_classes="dl-kb-row"):
            llm_key_status = gr.Textbox(label=bi("API key", "密钥"), value=values[3], interactive=False,
                                        elem_id="settings-llm-key-status", scale=1, min_width=120)
            llm_key = gr.Textbox(label=bi("New API key (memory only)", "新密钥（仅内存）"), type="password",
                                 elem_id="settings-llm-key", scale=2, min_width=180)
            test_llm = gr.Button(bi("Test chat", "测试对话"), elem_id="settings-test-llm", scale=1, min_width=120)
            test_vision = gr.Button(bi("Test vision", "测试视觉"), elem_id="settings-test-vision", scale=1,
                                    min_width=120)
    with gr.Group():
        gr.Markdown(f"#### {bi('Embedding', '向量模型')}", elem_classes="dl-section-title")
        with gr.Row():
            provider = gr.Dropdown(EMBEDDING_PROVIDERS, value=values[4], label=bi("Provider", "提供方"),
                                   elem_id="settings-embedding-provider", scale=1, min_width=160)
            embedding_model = gr.Textbox(label=bi("Model", "模型"), value=values[5],
                                         elem_id="settings-embedding-model", scale=2, min_width=200)
            embedding_url = gr.Textbox(label=bi("Endpoint (openai provider; empty: the LLM's)", "接口地址"),
                                       value=values[6], elem_id="settings-embedding-url", scale=2, min_width=200)
        with gr.Row(elem_classes="dl-kb-row"):
            embedding_key_status = gr.Textbox(label=bi("API key", "密钥"), value=values[7], interactive=False,
                                              elem_id="settings-embedding-key-status", scale=1, min_width=120)
            embedding_key = gr.Textbox(label=bi("New API key (memory only)", "新密钥（仅内存）"), type="password",
                                       elem_id="settings-embedding-key", scale=2, min_width=180)
            test_embedding = gr.Button(bi("Test embedding", "测试向量"), elem_id="settings-test-embedding", scale=1,
                                       min_width=140)
    with gr.Group():
        gr.Markdown(f"#### {bi('OCR and storage', 'OCR 与存储')}", elem_classes="dl-section-title")
        with gr.Row():
            ocr_engine = gr.Dropdown(OCR_ENGINES, value=values[8], label=bi("OCR engine", "OCR 引擎"),
                                     elem_id="settings-ocr-engine", scale=1, min_width=160)
            milvus_uri = gr.Textbox(label=bi("Milvus URI (restart to change)", "Milvus 地址（需重启修改）"),
                                    value=values[9], interactive=False, elem_id="settings-milvus-uri", scale=3,
                                    min_width=240)
    apply = gr.Button(bi("Apply", "应用"), variant="primary", elem_id="settings-apply")
    status = gr.Markdown("", elem_id="settings-status")

    fields = [llm_url, llm_model, vision_model, llm_key_status, provider, embedding_model, embedding_url,
              embedding_key_status, ocr_engine, milvus_uri]
    apply.click(handlers.apply, [llm_url, llm_model, vision_model, llm_key, provider, embedding_model,
                                 embedding_url, embedding_key, ocr_engine],
                [status, *fields, llm_key, embedding_key], api_name="settings_apply", api_visibility="private")
    test_llm.click(handlers.check_llm, None, status, api_name="settings_test_llm", api_visibility="undocumented")
    test_vision.click(handlers.check_vision, None, status, api_name="settings_test_vision",
                      api_visibility="undocumented")
    test_embedding.click(handlers.check_embedding, None, status, api_name="settings_test_embedding",
                         api_visibility="undocumented")
    return SettingsFields(handlers, fields)


class SettingsFields:
    """What the page load needs: the handler that reads the live settings, and the fields it fills."""

    def __init__(self, handlers: SettingsHandlers, fields: list[Any]):
        self.handlers = handlers
        self.fields = fields
