"""One language at a time: English and Chinese strings side by side in the code, one of them on the page.

Static text (labels, buttons, placeholders) goes through Gradio's own i18n: ``label(en, zh)`` returns a
``gr.I18n`` key that the browser translates (its language picks the default; the switch on the page
changes it). Text made by handlers (status lines, errors, answers) is chosen on the server with
``text(lang, en, zh)``; each browser session tells the server its language when the page loads and when
the user switches, and handlers look it up with ``lang_of(request)``.
"""

from __future__ import annotations

import threading
from typing import Any, Optional

import gradio as gr

DEFAULT = "en"

_pairs: dict[str, str] = {}  # English -> Chinese, every string the app can show
_translator = gr.I18n()
_sessions: dict[str, str] = {}  # browser session -> "en" | "zh"
_sessions_lock = threading.Lock()
_configured = DEFAULT  # the server's language (settings.ui.language): which half of a bilingual label leads


def normalize(language: Optional[str]) -> str:
    """ "zh-CN", "zh-Hans", "zh" -> "zh"; anything else -> "en"."""
    return "zh" if (language or "").lower().startswith("zh") else "en"


def label(en: str, zh: str) -> Any:
    """A static string the frontend translates (an ``I18nData`` key)."""
    _pairs[en] = zh
    return _translator(en)


def text(lang: Optional[str], en: str, zh: str) -> str:
    """A string made on the server, in the session's language."""
    _pairs[en] = zh
    return zh if normalize(lang) == "zh" else en


def set_language(language: str) -> None:
    """The server's configured language (settings.ui.language)."""
    global _configured
    _configured = normalize(language)


def bi(en: str, zh: str) -> str:
    """A bilingual label: both languages, the configured one first (where no session is known yet: the login page)."""
    return f"{zh} · {en}" if _configured == "zh" else f"{en} · {zh}"


def pairs() -> dict[str, str]:
    """Every (English, Chinese) pair registered so far: for the translations and for tests."""
    return dict(_pairs)


def translations() -> gr.I18n:
    """Gradio's i18n object for launch(); "zh-CN"/"zh-TW" browsers fall back to the "zh" table."""
    english = {key: key for key in _pairs}
    chinese = dict(_pairs)
    return gr.I18n(en=english, zh=chinese, **{"zh-CN": chinese, "zh-TW": chinese, "zh-HK": chinese})


def set_session_language(language: Optional[str], request: Optional[gr.Request]) -> str:
    lang = normalize(language)
    key = _session(request)
    if key:
        with _sessions_lock:
            _sessions[key] = lang
    return lang


def lang_of(request: Optional[gr.Request]) -> str:
    key = _session(request)
    with _sessions_lock:
        return _sessions.get(key, DEFAULT) if key else DEFAULT


def _session(request: Optional[gr.Request]) -> str:
    return (getattr(request, "session_hash", None) or "") if request is not None else ""


# Gradio's locale for a language: its own strings ("Drop File Here", "Use via API") have a "zh-CN" table and
# none for "zh"; ours are under both (translations()).
_GRADIO_LOCALE_JS = """
const doclensLocale = async (lang) => {
  const url = performance.getEntriesByType('resource').map((e) => e.name)
    .find((name) => /\\/assets\\/core-[^/]+\\.js$/.test(name));
  document.documentElement.dataset.doclensLanguage = lang;
  if (url) { try { (await import(url)).changeLocale(lang === 'zh' ? 'zh-CN' : 'en'); } catch (e) { console.warn(e); } }
};
"""

# On load: the language chosen on this page earlier (else the browser's) becomes Gradio's locale; the
# server is told which one it is, so a session's handlers answer in it.
RESTORE_LOCALE_JS = (
    """
async () => {
  """
    + _GRADIO_LOCALE_JS
    + """
  let lang = null;
  try { lang = localStorage.getItem('doclens-language'); } catch (e) {}
  if (lang === 'zh' || lang === 'en') {
    // After the first render: an earlier change leaves the labels of tabs not shown yet untranslated.
    await new Promise((resolve) => setTimeout(resolve, 400));
    await doclensLocale(lang);
    return lang;
  }
  lang = document.documentElement.lang || navigator.language || 'en';
  lang = lang.toLowerCase().startsWith('zh') ? 'zh' : 'en';
  document.documentElement.dataset.doclensLanguage = lang;
  return lang;
}
"""
)

# The switch, in place: remember the choice and change Gradio's locale; the server then tells the handlers
# and renders its own texts again (ui/app.py wire_language_switch). The tab shown stays shown.
SWITCH_LOCALE_JS = (
    """
async (lang) => {
  """
    + _GRADIO_LOCALE_JS
    + """
  try { localStorage.setItem('doclens-language', lang); } catch (e) {}
  await doclensLocale(lang);
  return lang;
}
"""
)
