"""One question over one knowledge base: search (a second time with the model's rewrite of a follow-up),
then the model's answer; a question about a figure goes to the vision model. ``backend.service`` wires it
to its knowledge bases, search and model clients."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

from backend.knowledge_bases import OpenKB
from backend.retrieval.doc_scope import Catalogs, Scope, scope_for
from backend.settings import Settings
from backend.store.base import SearchFilter, VectorStore
from backend.types import Answer, AnswerUpdate, SearchResult

log = logging.getLogger(__name__)

# (question, doc, top, said=None) -> ranked sources of the rerank search; ``said``: see DocLens._search
RerankSearch = Callable[..., SearchResult]


def search_scope(
    kb: OpenKB, catalogs: Catalogs, question: str, doc: Optional[str], exclude: Sequence[str], said: Optional[str]
) -> tuple[SearchFilter, Optional[Scope]]:
    """Where a search looks: the chosen document, or every complete one but the excluded; and the
    document(s) the question names (see ``DocLens._search`` for ``said``)."""
    include = [kb.find_document(doc).doc_id] if doc else None
    excluded = kb.registry.pending_ids() + [kb.find_document(name).doc_id for name in exclude]
    where = SearchFilter(include_doc_ids=include, exclude_doc_ids=excluded)
    catalog = catalogs.get(kb.collection, kb.registry, excluded)
    scope = scope_for(question, catalog, include[0] if include else None)
    if scope is not None and said is not None and not _named_by_user(scope, scope_for(said, catalog)):
        scope = None  # the model named that document, not the user: it must not narrow the search
    return where, scope


def _named_by_user(scope, said_scope) -> bool:
    """Every document the rewrite is limited to was named in what the user wrote."""
    return said_scope is not None and set(scope.doc_ids) <= set(said_scope.doc_ids)


def stream_answer(
    llm,
    settings: Settings,
    search: RerankSearch,
    question: str,
    history: Optional[list[dict[str, str]]],
    doc: Optional[str],
) -> Iterator[AnswerUpdate]:
    """The updates of ``DocLens.ask_stream`` for a question about the text."""
    from backend import answering

    standalone = answering.condense_question(llm, history, question) if history else question
    top = max(settings.retrieval.top_k, settings.llm.context_sources)
    result = search(question, doc, top)
    if standalone.strip() != question.strip():
        # The rewrite helps follow-ups ("and its energy?") but must not take over: a model that
        # rewrites badly would otherwise decide alone what is found. The user's words weigh more.
        from backend.retrieval.fusion import fuse_results

        said = "\n".join([*(turn.get("content") or "" for turn in answering.normalize_history(history)), question])
        result = fuse_results(result, search(standalone, doc, top, said=said), top)
    for update in answering.answer_stream(
        llm, question, result.sources, result.confidence, history=history, searched_question=standalone
    ):
        if update.done and update.answer is not None:
            update.answer.searched_in = result.searched_in
            yield update
        elif update.delta:
            yield update


def figure_answer_updates(answer: Answer) -> Iterator[AnswerUpdate]:
    """A figure's answer comes whole: one delta, then the final update."""
    yield AnswerUpdate(text=answer.answer, delta=answer.answer)
    yield AnswerUpdate(text=answer.answer, done=True, answer=answer)


def ask_about_figure(kb: OpenKB, llm, search: RerankSearch, question: str, figure_id: str, sources: int) -> Answer:
    """The vision model's answer about one figure, with its page, its document and ``sources`` passages."""
    from backend import answering

    figure = kb.figure(figure_id)
    page_text = kb.registry.page_text(figure.doc_id, figure.page)
    document_text = "\n\n".join(text for _, text in kb.registry.document_text(figure.doc_id))
    context = answering.figure_context(figure, page_text, document_text)
    result = search(question, figure.file, sources)
    try:
        image = Path(figure.path).read_bytes()
    except OSError as exc:
        log.warning("figure image %s unreadable: %s", figure.path, exc)
        image = None
    return answering.answer_about_figure(llm, question, figure, image, None, context, result.sources, result.confidence)


def document_summary(kb: OpenKB, store: VectorStore, llm, llm_configured: bool, file: str, refresh: bool) -> str:
    """``DocLens.summary``: cached, else generated and saved, else the first passages (not saved)."""
    from backend import answering
    from backend.errors import LLMError

    doc = kb.find_document(file)
    cached = None if refresh else kb.registry.summary(doc.doc_id)
    if cached:
        return cached
    pages = [text for _, text in kb.registry.document_text(doc.doc_id)]
    try:
        summary = answering.summarize_document(llm, doc.file, pages)
    except LLMError as exc:
        reason = "" if not llm_configured else f"The model failed ({exc})"
        first = [c.content for c in store.chunks(kb.collection, doc_id=doc.doc_id, limit=3)]
        return answering.fallback_summary(doc.file, first, reason=reason)
    kb.registry.save_summary(doc.doc_id, summary)
    return summary
