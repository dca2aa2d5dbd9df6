"""Errors the user sees: one line that names the thing and the reason."""


class DocLensError(Exception):
    """A failure we can explain to the user in one line (no traceback needed)."""


class SettingsError(DocLensError):
    """A configuration value is missing or invalid."""


class KnowledgeBaseError(DocLensError):
    """A knowledge-base operation cannot be done (bad name, duplicate, missing...)."""


class KnowledgeBaseDeleted(KnowledgeBaseError):
    """The knowledge base was deleted while a question or an upload was using it."""


class StoreError(DocLensError):
    """The vector store is unreachable, locked or in an unexpected state."""


class DocumentError(DocLensError):
    """A document cannot be ingested (corrupt, encrypted, too large...)."""


class EmbeddingError(DocLensError):
    """The embedding model cannot be loaded or the embedding endpoint failed."""


class LLMError(DocLensError):
    """The language model endpoint failed or is not configured."""


class CancelledError(DocLensError):
    """The user cancelled a long-running operation."""


def one_line(value: object, limit: int = 200) -> str:
    """A message or exception as one line of at most ``limit`` characters, for errors and logs.

    An exception gives its ``message`` attribute (SDK errors) or its text, else its class name."""
    text = str(getattr(value, "message", None) or value) if isinstance(value, BaseException) else str(value)
    text = " ".join(text.split()) or (type(value).__name__ if isinstance(value, BaseException) else "")
    return text if len(text) <= limit else text[: limit - 1] + "…"
