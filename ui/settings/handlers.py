"""The Settings tab's handlers: endpoints and models, connection tests, changes applied without a restart.

Who changes what: the operator (the logged-in user named by ``--admin`` / ``ui.admin``, or code calling
these handlers in-process) changes the server for everyone. Every other web user gets a profile for
their own browser session: their chat model's endpoint, models and key, kept in a ``gr.State`` (server
memory, never sent to the page) and passed with each of their questions; embedding and OCR stay the
operator's. A key is bound to the endpoint it was given for: a changed base URL with no new key sends
no key. Keys are shown only as "set" / "not set".
"""

from __future__ import annotations

import logging
from typing import Optional
from urllib.parse import urlsplit, urlunsplit

import gradio as gr
from pydantic import SecretStr

from backend.errors import SettingsError
from backend.service import DocLens
from backend.settings import EmbeddingSettings, LLMSettings, OCRSettings, Settings, with_changes
from ui.common import shows_errors, warning_md
from ui.i18n.messages import translate_error, translate_result
from ui.i18n.strings import lang_of, text
from ui.icons import icon

log = logging.getLogger(__name__)

EMBEDDING_PROVIDERS = list(EmbeddingSettings.model_fields["provider"].annotation.__args__)
OCR_ENGINES = list(OCRSettings.model_fields["engine"].annotation.__args__)
OPERATOR_NOTE = (
    "You are the operator: changes apply to this whole server at once, for every user, and "
    "are not saved. Keys are never shown.",
    "你是管理员：修改立即作用于整个服务器的所有用户，不会保存。密钥永不显示。",
)
SESSION_NOTE = (
    "Changes apply to your browser session only (your own chat model, endpoint and key, kept "
    "in server memory until you close the page). Embedding, OCR and the server's model are set "
    "by the operator.",
    "修改仅作用于你的浏览器会话（你自己的对话模型、接口与密钥，仅保存在服务器内存中，关闭页面即失效）。"
    "向量模型、OCR 与服务器模型由管理员设置。",
)


def key_status(secret: Optional[SecretStr], lang: str = "en") -> str:
    return text(lang, "set", "已设置") if secret and secret.get_secret_value() else text(lang, "not set", "未设置")


def embedding_key_status(embedding: EmbeddingSettings, lang: str = "en") -> str:
    """A local model needs no key: the LLM's key (which the embedding inherits for the openai provider)
    read "set" beside a local model."""
    if embedding.provider != "openai":
        return text(lang, "not used (local model)", "不需要（本地模型）")
    return key_status(embedding.api_key, lang)


def shown_milvus_uri(settings: Settings, lang: str = "en") -> str:
    """What the page says about the store: never a path on the server (Gradio sends every field's first
    value to anyone who opens the page), and never a login inside a server URL."""
    if settings.is_milvus_lite:
        return text(lang, "embedded Milvus Lite (in the data folder)", "内置 Milvus Lite（在数据目录中）")
    parts = urlsplit(settings.milvus_uri)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def bound_key(typed: str, current: Optional[SecretStr], old_url: str, new_url: str) -> Optional[SecretStr]:
    """The key to use with ``new_url``: the one typed now, else the current one only if the URL is the
    one it was given for (a key never follows a changed endpoint)."""
    typed = (typed or "").strip()
    if typed:
        return SecretStr(typed)
    return current if _same_url(old_url, new_url) else None


def _same_url(a: str, b: str) -> bool:
    return (a or "").strip().rstrip("/") == (b or "").strip().rstrip("/")


def llm_changes(base: LLMSettings, url: str, model: str, vision_model: str, key: str, timeout: Optional[float]) -> dict:
    """The chat model the form describes, as changes to ``base`` (what it replaces): an empty timeout
    keeps ``base``'s, an empty key keeps its key only for its own endpoint (``bound_key``)."""
    url = (url or "").strip()
    return {
        "base_url": url,
        "model": (model or "").strip(),
        "vision_model": (vision_model or "").strip(),
        "timeout": base.timeout if timeout is None else timeout,
        "api_key": bound_key(key, base.api_key, base.base_url, url),
    }


def check_line(name: str, result: tuple[bool, str]) -> str:
    ok, message = result
    return f"{icon('ok' if ok else 'fail')} **{name}**: {message}"


class SettingsHandlers:
    def __init__(self, service: DocLens, admin: str = ""):
        self.service = service
        self.admin = admin
        self.check_llm = self.typed_check(False)
        self.check_vision = self.typed_check(True)

    def is_operator(self, request: Optional[gr.Request]) -> bool:
        """In-process callers (no web request) are the operator; on the web only the ``--admin`` login."""
        if request is None:
            return True
        return bool(self.admin) and getattr(request, "username", None) == self.admin

    def current_values(self, profile: Optional[LLMSettings] = None, lang: str = "en") -> tuple:
        """Outputs, in build order: llm url, model, vision model, llm key status, embedding provider,
        model, url, embedding key status, ocr engine, milvus uri, llm timeout. ``profile``: a session's
        own model."""
        s = self.service.settings
        llm = profile or s.llm
        return (
            llm.base_url,
            llm.model,
            llm.vision_model,
            key_status(llm.api_key, lang),
            s.embedding.provider,
            s.embedding.model,
            s.embedding.base_url,
            embedding_key_status(s.embedding, lang),
            s.ocr.engine,
            shown_milvus_uri(s, lang),
            llm.timeout,
        )

    def page_values(self, profile: Optional[LLMSettings], request: gr.Request) -> tuple:
        """Page load: who this user is (the note), then the fields, then the embedding's key box; server-wide
        ones locked for sessions (the key box too: it was editable beside a locked provider)."""
        operator = self.is_operator(request)
        lang = lang_of(request)
        values = list(self.current_values(profile, lang))
        for index in (4, 5, 6, 8):  # embedding provider, model, url; OCR engine
            values[index] = gr.update(value=values[index], interactive=operator)
        note = text(lang, *(OPERATOR_NOTE if operator else SESSION_NOTE))
        return (note, *values, gr.update(interactive=operator))

    @shows_errors(
        "apply the settings",
        outputs=lambda line, self, lang, **_: (warning_md(line), *self.current_values(None, lang), "", ""),
    )
    def apply(
        self,
        llm_url: str,
        llm_model: str,
        vision_model: str,
        llm_key: str,
        provider: str,
        embedding_model: str,
        embedding_url: str,
        embedding_key: str,
        ocr_engine: str,
        llm_timeout: Optional[float] = None,
        lang: str = "en",
    ) -> tuple:
        """Server-wide (the operator). Outputs: status, every field of ``current_values``, both key boxes.
        An empty number keeps its current value."""
        current = self.service.settings
        llm_url, embedding_url = (llm_url or "").strip(), (embedding_url or "").strip()
        new_settings = with_changes(
            current,
            {
                "llm": llm_changes(current.llm, llm_url, llm_model, vision_model, llm_key, llm_timeout),
                "embedding": {
                    "provider": provider,
                    "model": (embedding_model or "").strip(),
                    "base_url": embedding_url,
                    "api_key": bound_key(
                        embedding_key,
                        current.embedding.api_key,
                        current.embedding.base_url or current.llm.base_url,
                        embedding_url or llm_url,
                    ),
                },
                "ocr": {"engine": ocr_engine},
            },
        )
        self.service.reconfigure(new_settings)
        log.info("settings changed from the web page: %s", _summary(new_settings))
        applied = text(lang, "Applied to this server (not saved to disk).", "已应用于本服务器（未写入磁盘）。")
        return (f"{icon('ok')} {applied}", *self.current_values(None, lang), "", "")

    def apply_from_page(
        self,
        llm_url: str,
        llm_model: str,
        vision_model: str,
        llm_key: str,
        provider: str,
        embedding_model: str,
        embedding_url: str,
        embedding_key: str,
        ocr_engine: str,
        llm_timeout: Optional[float],
        profile: Optional[LLMSettings],
        request: gr.Request,
    ) -> tuple:
        """The Apply button: server-wide for the operator, else this session's own model profile.
        Outputs: those of ``apply``, then the session profile."""
        lang = lang_of(request)
        if self.is_operator(request):
            return (
                *self.apply(
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
                    lang,
                ),
                profile,
            )
        try:
            changed = self.typed_llm(profile, llm_url, llm_model, vision_model, llm_key, llm_timeout)
        except SettingsError as exc:
            return (warning_md(translate_error(str(exc), lang)), *self.current_values(profile, lang), "", "", profile)
        log.info("a session chose its own model: %s:%s", changed.base_url or "-", changed.model or "-")
        applied = text(lang, "Applied to your session only.", "仅应用于你的会话。")
        return (f"{icon('ok')} {applied}", *self.current_values(changed, lang), "", "", changed)

    def typed_llm(
        self, profile: Optional[LLMSettings], url: str, model: str, vision_model: str, key: str, timeout
    ) -> LLMSettings:
        """The chat model typed in the form, in place of the session's (``profile``) or the server's."""
        base = profile or self.service.settings.llm
        changes = llm_changes(base, url, model, vision_model, key, timeout)
        return with_changes(self.service.settings, {"llm": changes}).llm

    def typed_check(self, vision: bool):
        """The Test chat (or Test vision) button: the model as typed in the form, not as applied (a user
        tests before pressing Apply), in place of the session's ``profile`` or the server's."""

        def check(
            url: str,
            model: str,
            vision_model: str,
            key: str,
            timeout: Optional[float],
            profile: Optional[LLMSettings] = None,
            request: gr.Request = None,
        ) -> str:
            return self._check_typed(vision, (url, model, vision_model, key, timeout), profile, lang_of(request))

        return check

    def _check_typed(self, vision: bool, typed: tuple, profile: Optional[LLMSettings], lang: str) -> str:
        name = text(lang, "Vision model", "视觉模型") if vision else text(lang, "Chat model", "对话模型")
        try:
            llm = self.typed_llm(profile, *typed)
        except SettingsError as exc:
            return check_line(name, (False, translate_error(str(exc), lang)))
        return self._check(name, lambda: self.service.check_llm(vision, llm), lang)

    def check_embedding(self, request: gr.Request = None) -> str:
        lang = lang_of(request)
        return self._check(text(lang, "Embedding", "向量模型"), self.service.check_embedding, lang)

    @staticmethod
    @shows_errors("test the connection", outputs=lambda line, name, **_: check_line(name, (False, line)))
    def _check(name: str, run, lang: str = "en") -> str:
        ok, message = run()
        return check_line(name, (ok, translate_result(message, lang) if ok else translate_error(message, lang)))


def _summary(settings: Settings) -> str:
    return (
        f"llm={settings.llm.base_url or '-'}:{settings.llm.model or '-'} vision={settings.vision_model or '-'} "
        f"embedding={settings.embedding.provider}:{settings.embedding.model} ocr={settings.ocr.engine}"
    )
