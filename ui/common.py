"""Helpers every tab shares: readable errors, and the knowledge-base and document choice lists."""

from __future__ import annotations

import functools
import importlib.util
import inspect
import logging
import math
import re
import sys
import threading
from collections import OrderedDict
from typing import Any, Callable, Optional, TypeVar, Union

import gradio as gr

from backend.errors import DocLensError
from backend.service import LOCAL, DocLens
from backend.types import MAX_FILTER_CHARS, DocumentPage
from ui.i18n.strings import lang_of, text
from ui.icons import icon

log = logging.getLogger(__name__)
# The page's own events: off the API page (they serve the UI, not callers of the API).
UNDOCUMENTED = {"api_visibility": "undocumented"}

ALL_DOCUMENTS = "*"  # the doc filter's value for "all documents" (no PDF is called "*")
PICKER_CHOICES = 100  # file names a document picker holds at once
# Temporary knowledge bases the evaluation makes and deletes again: never offered to other sessions.
_TEMPORARY_KB = re.compile(r"^(eval|bench) \d{8}-\d{6}( \d+)?$")  # " 2": one of a split library


def no_matplotlib_probe() -> None:
    """Gradio tries ``import matplotlib`` before and after every event step (each streamed message too).
    Without matplotlib installed each try searches all of sys.path again: a fifth of the web server's
    thread under 16 sessions. Marked absent, the try fails at once, as the search would."""
    if "matplotlib" not in sys.modules and importlib.util.find_spec("matplotlib") is None:
        sys.modules["matplotlib"] = None  # type: ignore[assignment]


def queue_events(demo: gr.Blocks, concurrency: int) -> None:
    """Gradio's queue, polled less often when idle: on Linux it looks for new events every millisecond and
    for progress to send every 10 ms, a tenth of a core while nobody uses the app. Every 10 and 50 ms
    instead: an event waits at most 10 ms more to start, and a progress bar moves 20 times a second."""
    demo.queue(default_concurrency_limit=concurrency)
    queue = demo._queue
    queue.sleep_when_free = max(queue.sleep_when_free, 0.01)
    queue.progress_update_sleep_when_free = max(queue.progress_update_sleep_when_free, 0.05)


def error_text(exc: BaseException, action: str, lang: str = "en") -> str:
    """One readable line for the user; unexpected errors are logged with their traceback."""
    if isinstance(exc, DocLensError):
        from ui.i18n.messages import translate_error

        return translate_error(str(exc), lang)
    log.error("unexpected error while trying to %s", action, exc_info=exc)
    return text(
        lang,
        "could not {action}: unexpected {name} (details are in the server log)",
        "无法{action}：意外的 {name}（详情见服务器日志）",
    ).format(action=action if lang != "zh" else _zh_action(action), name=exc.__class__.__name__)


Handler = TypeVar("Handler", bound=Callable[..., Any])


def shows_errors(action: str, outputs: Optional[Callable[..., Any]] = None) -> Callable[[Handler], Handler]:
    """A handler that never raises: a failure becomes one line for the user (``error_text``, in the language
    of the call's ``lang`` or ``request``), returned as ``warning_md(line)``; or, for a handler with other
    outputs, as ``outputs(line, **arguments)``, given the handler's arguments by name (defaults filled in)."""

    def decorate(handler: Handler) -> Handler:
        signature = inspect.signature(handler)

        @functools.wraps(handler)  # Gradio reads the handler's own signature (request, progress)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                return handler(*args, **kwargs)
            except Exception as exc:
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
                arguments = bound.arguments
                lang = (
                    arguments["lang"] if isinstance(arguments.get("lang"), str) else lang_of(arguments.get("request"))
                )
                line = error_text(exc, action, lang)
                return warning_md(line) if outputs is None else outputs(line, **arguments)

        return guarded  # type: ignore[return-value]

    return decorate


def _zh_action(action: str) -> str:
    from ui.i18n.messages import ACTIONS_ZH

    return ACTIONS_ZH.get(action, action)


def actor(request: Optional[gr.Request]) -> str:
    """Who the audit log names: the login when the app has logins, else "local" (one user, everything)."""
    return (getattr(request, "username", None) if request is not None else None) or LOCAL


# Gradio 6.31's page defers an "always_last" listener triggered while it runs, and when it ends dispatches
# the whole event again, to every listener of it: two such listeners on one change defer each other for
# good and the page stays pending. So a change has one listener; what else it does is chained with .then
# (tests/ui/test_app_handlers.py holds this for every trigger).


class ChangeSteps:
    """What one change does in several parts of a tab, run as one server step: Gradio 6.31's page passes over
    every component it has drawn for each status change of each event, so each chained step cost it a pass."""

    def __init__(self) -> None:
        self.steps: list[tuple[Callable[..., Any], list, list]] = []

    def add(self, fn: Callable[..., Any], inputs: list, outputs: list) -> None:
        """``fn(*inputs, request)`` gives one value per output (a tuple when there are several)."""
        self.steps.append((fn, list(inputs), list(outputs)))

    def wire(self, trigger: Callable[..., Any], api_name: str) -> Any:
        """One listener on ``trigger`` (a component's change) that runs every step, in the order added."""
        steps = list(self.steps)

        def run(request: gr.Request, *values: Any) -> tuple:
            results: list[Any] = []
            for fn, inputs, outputs in steps:
                out = fn(*values[: len(inputs)], request)
                values = values[len(inputs) :]
                results.extend(out if len(outputs) > 1 else (out,))
            return tuple(results)

        inputs = [c for _, step_inputs, _ in steps for c in step_inputs]
        outputs = [c for _, _, step_outputs in steps for c in step_outputs]
        return trigger(run, inputs, outputs, api_name=api_name, queue=False, **UNDOCUMENTED)


def hide_if_shown(shown: Any) -> Any:
    """Hide a download button only when it is shown (``shown``: its file, or a flag), so a picker's change
    sends nothing to a hidden one. Output: the button."""
    return gr.update(value=None, visible=False) if shown else gr.skip()


def warning_md(message: str) -> str:
    return f"{icon('warn')} {message}"


def is_temporary_kb(name: str) -> bool:
    return bool(_TEMPORARY_KB.match(name))


def _no_choices(_line: str, *_args: Any, **_kwargs: Any) -> list[str]:
    return []  # the page must still load when the store is unhappy (the failure is in the log)


@shows_errors("list knowledge bases", outputs=_no_choices)
def kb_names(service: DocLens, who: str = LOCAL) -> list[str]:
    """The knowledge bases ``who`` may read (with logins, none for a page not yet logged in)."""
    return [kb.name for kb in service.list_kbs(who) if not is_temporary_kb(kb.name)]


def pick(current: Optional[str], choices: list[str]) -> Optional[str]:
    """Keep the current choice when it still exists, else the first one."""
    if current in choices:
        return current
    return choices[0] if choices else None


def kb_dropdown(service: DocLens, current: Optional[str], who: str = LOCAL) -> Any:
    choices = kb_names(service, who)
    return gr.update(choices=choices, value=pick(current, choices))


@shows_errors("list documents", outputs=_no_choices)
def document_files(service: DocLens, kb: Optional[str], who: str = LOCAL, typed: str = "") -> list[str]:
    """The first PICKER_CHOICES file names (by name) containing ``typed``. A picker never carries a whole
    library: 10,000 names kept the page from drawing for seconds; typing asks for the names that match
    (``picker_matches``)."""
    if not kb:
        return []
    asked = DocumentPage(contains=typed.strip()[:MAX_FILTER_CHARS], limit=PICKER_CHOICES)
    return [doc.file for doc in service.documents_page(kb, asked, who).rows]


def has_document(service: DocLens, kb: Optional[str], file: Optional[str], who: str = LOCAL) -> bool:
    return bool(kb and file) and service.has_document(kb or "", file or "", who)


KEYS_THAT_KEEP_THE_TEXT = frozenset(
    "ArrowDown ArrowUp ArrowLeft ArrowRight Enter Escape Tab Home End PageUp PageDown Shift Control Alt Meta"
    " CapsLock".split()
)


class LatestOnly:
    """Tells whether a request is still a browser's newest for one picker. Each key sends its own request
    (trigger_mode "multiple"): Gradio 6.31's "always_last" re-sends the first waiting key's text, not the
    last, so on a loaded server the list ended on an older prefix's names; with one request per key, an
    older one that finishes last must not replace the newer matches. Keys are ordered by the time the
    browser stamped them (a loaded server's event loop may read two requests in either order), or by
    arrival when a caller sends no stamp."""

    def __init__(self, remembered: int = 4096) -> None:
        self._newest: OrderedDict[str, float] = OrderedDict()
        self._remembered = remembered  # browsers (session ids) kept, the oldest forgotten
        self._arrivals = 0
        self._lock = threading.Lock()

    def start(self, browser: str, stamp: Optional[float] = None) -> float:
        """The place of this browser's request that has just arrived: its stamp, else its arrival."""
        with self._lock:
            if stamp is None:
                self._arrivals += 1
                stamp = float(self._arrivals)
            self._newest[browser] = max(self._newest.pop(browser, stamp), stamp)
            while len(self._newest) > self._remembered:
                self._newest.popitem(last=False)
            return stamp

    def is_newest(self, browser: str, place: float) -> bool:
        with self._lock:
            return self._newest.get(browser, place) <= place


# The key's time in the browser, sent with its request in a hidden box (see LatestOnly).
KEY_STAMP_JS = "(kb, picked) => [kb, picked, String(performance.now())]"


def wire_picker_matches(service: DocLens, picker: gr.Dropdown, kb: gr.Dropdown, api_name: str) -> None:
    """Each key typed into ``picker`` asks for the names in ``kb`` that match (``picker_matches``)."""
    stamp = gr.Textbox(None, visible=False)
    picker.key_up(
        picker_matches(service),
        [kb, picker, stamp],
        picker,
        js=KEY_STAMP_JS,
        api_name=api_name,
        queue=False,
        show_progress="hidden",
        trigger_mode="multiple",  # one request per key: see LatestOnly
        **UNDOCUMENTED,
    )


def picker_matches(service: DocLens) -> Callable[..., Any]:
    """A file picker's key_up handler (trigger_mode "multiple"): its choices become the file names that
    contain what is typed (and those already picked, which a multiselect keeps as its tokens). A key whose
    answer is overtaken by a later key's changes nothing."""
    newest = LatestOnly()

    def matches(
        kb: Optional[str], picked: DocFilter, stamp: Optional[str], typed: gr.KeyUpData, request: gr.Request = None
    ) -> Any:
        if typed.key in KEYS_THAT_KEEP_THE_TEXT:  # new choices would drop the option the arrows reached
            return gr.skip()
        browser = getattr(request, "session_hash", None) or ""
        place = newest.start(browser, _stamp(stamp))
        files = document_files(service, kb, actor(request), typed.input_value or "")
        if not newest.is_newest(browser, place):
            return gr.skip()
        return gr.update(choices=[*files, *(f for f in selected_files(picked) if f not in files)])

    return matches


def _stamp(sent: Optional[str]) -> Optional[float]:
    """The browser's stamp of a key (None when absent or not a finite number: then the arrival counts)."""
    try:
        value = float(sent) if sent else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


DocFilter = Union[str, list[str], None]  # the Chat tab's multiselect; a single name (or "*") from the API


def doc_filter_dropdown(service: DocLens, kb: Optional[str], current: DocFilter, who: str = LOCAL) -> Any:
    """The Chat tab's document picker for ``kb``: the first names, and those picked that it still holds."""
    files = document_files(service, kb, who)
    kept = [f for f in selected_files(current) if f in files or has_document(service, kb, f, who)]
    return gr.update(choices=[*files, *(f for f in kept if f not in files)], value=kept)


def selected_files(doc_filter: DocFilter) -> list[str]:
    """The documents picked (none: all of them)."""
    picked = doc_filter if isinstance(doc_filter, list) else [doc_filter]
    return [f for f in picked if f and f != ALL_DOCUMENTS]


def selected_file(doc_filter: DocFilter) -> Optional[str]:
    """The one document picked, or None (all documents, or several): what a summary is of."""
    picked = selected_files(doc_filter)
    return picked[0] if len(picked) == 1 else None
