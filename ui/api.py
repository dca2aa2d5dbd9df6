"""Plain JSON endpoints for gradio_client: list, create, upload, ask (whole or streamed), search, delete
(into the trash), the trash, and sharing a knowledge base. Each call is checked against the login's role (issue 27).

No ``from __future__ import annotations`` here: gr.api reads these functions' real type hints.
"""

import logging
from typing import Any, Iterator, Union

import gradio as gr

from backend.errors import DocLensError
from backend.service import DocLens
from ui.common import actor, is_temporary_kb
from ui.web_files import ReceivedUploads

log = logging.getLogger(__name__)


def register_api(service: DocLens, uploads: ReceivedUploads) -> None:
    """Add the endpoints to the Blocks being built. Errors come back as one-line gr.Error (``_call``)."""

    def list_kbs(request: gr.Request) -> list[dict]:
        """The knowledge bases this login may read, with their document and chunk counts."""
        return [kb.to_dict() for kb in _call(service.list_kbs, actor(request)) if not is_temporary_kb(kb.name)]

    def create_kb(name: str, request: gr.Request) -> dict:
        """Create a knowledge base (owned by this login when the server has logins); returns it."""
        return _call(service.create_kb, name, who=actor(request)).to_dict()

    def upload(kb: str, files: list[gr.FileData], request: gr.Request) -> list[dict]:
        """Add PDFs (use gradio_client.handle_file); one result per file. Editors and owners only."""
        paths, names = _call(uploads.admit, files)
        if not paths:
            raise _user_error("upload", "no files were sent: pass [handle_file('a.pdf'), ...]")
        try:
            return [r.to_dict() for r in _call(service.ingest, kb, paths, display_names=names, who=actor(request))]
        finally:
            uploads.discard(paths)  # indexed or refused: the upload's copy is not needed any more

    def documents(kb: str, request: gr.Request) -> list[dict]:
        """The documents of a knowledge base."""
        return [d.to_dict() for d in _call(service.documents, kb, actor(request))]

    def ask(
        kb: Union[str, list[str]], question: str, doc: Union[str, list[str]] = "", request: gr.Request = None
    ) -> dict:  # type: ignore[assignment]
        """Answer a question from a knowledge base, or a list of them (one ranking over all); ``doc``: only
        that file, or a list ("KB/file" names the KB). Answer, confidence, sources (each with its kb)."""
        return _call(service.ask, kb, question, doc=doc or None, who=actor(request)).to_dict()

    def search(
        kb: Union[str, list[str]],
        question: str,
        doc: Union[str, list[str]] = "",
        top: int = 0,
        request: gr.Request = None,  # type: ignore[assignment]
    ) -> dict:
        """Ranked sources without a model, from a knowledge base or a list of them (``doc`` as for /ask)."""
        return _call(service.search, kb, question, doc=doc or None, top=top or None, who=actor(request)).to_dict()

    def delete_kb(name: str, request: gr.Request) -> str:
        """Move a knowledge base and all its documents to the trash (``/restore`` brings it back). Owners only."""
        entry = _call(service.delete_kb, name, who=actor(request))
        return f"deleted {entry.kb}: in the trash as {entry.id} until it is purged"

    def trash(request: gr.Request) -> list[dict]:
        """What in the trash this login may restore: id, kind, kb, file, deleted when and by whom, purge date."""
        return [e.to_dict() for e in _call(service.trash_entries, actor(request))]

    def restore(entry_id: str, new_name: str = "", request: gr.Request = None) -> dict:  # type: ignore[assignment]
        """Bring a trash entry back (``new_name``: for a knowledge base whose name is taken now)."""
        return _call(service.restore, entry_id, new_name=new_name or None, who=actor(request)).to_dict()

    for fn in (list_kbs, create_kb, documents, ask, search, delete_kb, trash, restore):
        gr.api(fn, api_name=fn.__name__)
    gr.api(upload, api_name="upload", concurrency_id="ingest", concurrency_limit=1)  # one ingestion at a time
    for register in (register_streaming_api, register_sharing_api):
        register(service)


def register_streaming_api(service: DocLens) -> None:
    """/ask_stream: what a client shows while the model writes."""

    def ask_stream(
        kb: Union[str, list[str]], question: str, doc: Union[str, list[str]] = "", request: gr.Request = None
    ) -> Iterator[dict]:  # type: ignore[assignment]
        """As /ask, streamed (iterate ``client.submit(...)``): first {"sources": [...], "confidence": n},
        found before the model writes (again, once a formula kept as an image in them is read as LaTeX); then
        {"delta": text} as the answer arrives; last {"answer": {...}}, what /ask returns."""
        updates = _call(service.ask_stream, kb, question, doc=doc or None, who=actor(request))
        while (update := _call(next, updates, None)) is not None:
            if update.done and update.answer is not None:
                yield {"answer": update.answer.to_dict()}
            elif update.sources is not None:
                yield {"sources": [s.to_dict() for s in update.sources], "confidence": round(update.confidence or 0, 1)}
            elif update.delta:
                yield {"delta": update.delta}

    gr.api(ask_stream, api_name="ask_stream")


def register_sharing_api(service: DocLens) -> None:
    """Who may read or change a knowledge base (with logins; SECURITY.md)."""

    def share(kb: str, login: str, role: str, request: gr.Request) -> dict:
        """Share a knowledge base with a login (or "*" for everyone) as "reader" or "editor", or take the
        share back ("none"). Its owner and the admin only; returns its owner and shares."""
        return _call(service.share, kb, login, role, who=actor(request))

    def access(kb: str, request: gr.Request) -> dict:
        """A knowledge base's owner and shares, and this login's role on it."""
        return {**_call(service.access, kb, actor(request)), "role": service.role(kb, actor(request))}

    gr.api(share, api_name="share")
    gr.api(access, api_name="access")


def _call(fn, *args: Any, **kwargs: Any) -> Any:
    """Run a service call; DocLens errors become one-line gr.Error messages the client shows."""
    try:
        return fn(*args, **kwargs)
    except DocLensError as exc:
        raise _user_error(getattr(fn, "__name__", "call"), str(exc)) from None
    except Exception as exc:
        log.exception("API call %s failed", getattr(fn, "__name__", fn))
        raise gr.Error(
            f"unexpected {exc.__class__.__name__} (details are in the server log)", print_exception=False
        ) from None


def _user_error(where: str, message: str) -> gr.Error:
    """A mistake of the caller (bad name, no file...): one log line, no traceback."""
    log.info("API %s refused: %s", where, message)
    return gr.Error(message, print_exception=False)
