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
