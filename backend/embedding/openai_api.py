"""Embeddings from an OpenAI-compatible ``/embeddings`` endpoint (``embedding.provider: openai``).

Many texts per request. Pacing, retries and error messages are the shared transport's
(``backend.llm.transport``): the endpoint's rate limiter is the one chat uses when both are one server."""

from __future__ import annotations

import logging
from typing import Optional

import numpy as np

from backend.embedding.base import BUNDLED_PREFIX, OPENAI_PREFIX, BatchedEmbedder, Kind
from backend.errors import EmbeddingError
from backend.llm.transport import Endpoint, not_openai_message
from backend.settings import Settings

log = logging.getLogger(__name__)

DIMENSION_PROBE_TEXT = "dimension probe"


def openai_base_url(settings: Settings) -> str:
    return (settings.embedding.base_url or settings.llm.base_url).strip()


def _embedding_error(message: str, _status: Optional[int] = None) -> EmbeddingError:
    return EmbeddingError(message)


class OpenAIEmbedder(BatchedEmbedder):
    def __init__(self, settings: Settings) -> None:
        e = settings.embedding
        base_url = openai_base_url(settings)
        self.model_name = e.model.strip()
        if not base_url:
            raise EmbeddingError(
                "embedding.provider is openai but no endpoint is set (set embedding.base_url or llm.base_url)"
            )
        if not self.model_name or self.model_name.startswith(BUNDLED_PREFIX):
            raise EmbeddingError(
                f"embedding.provider is openai: set embedding.model to the endpoint's "
                f"embedding model name (got {self.model_name!r})"
            )
        secret = e.api_key.get_secret_value() if e.api_key else ""
        self.endpoint = Endpoint(
            base_url,
            secret,
            timeout=e.timeout,
            qps=settings.llm.qps,
            max_retries=settings.llm.max_retries,
            error=_embedding_error,
            what="embedding endpoint",
            key_variable="DOCLENS_EMBEDDING_API_KEY",
        )
        self.base_url = self.endpoint.base_url
        super().__init__(f"{OPENAI_PREFIX}{self.model_name}", e.dim or 0, e.batch_size)
        if not self.dim:
            self.dim = int(self._request([DIMENSION_PROBE_TEXT]).shape[1])

    def warm_up(self) -> None:
        """Nothing to set up here, and a request would cost the user a call."""

    def _embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        return self._request(texts)

    def _request(self, texts: list[str]) -> np.ndarray:
        response = self.endpoint.call(
            lambda client: client.embeddings.create(model=self.model_name, input=texts, encoding_format="float"),
            model=self.model_name,
        )
        data = getattr(response, "data", None)
        if not isinstance(data, list):
            raise EmbeddingError(not_openai_message(self.base_url, "embedding.base_url"))
        rows = sorted(data, key=lambda item: item.index)
        if len(rows) != len(texts):
            raise self._error(f"answered {len(rows)} vectors for {len(texts)} texts")
        try:
            vectors = np.asarray([row.embedding for row in rows], dtype=np.float32)
        except (TypeError, ValueError):
            vectors = np.empty(0, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] == 0:
            raise self._error("answered vectors that are not lists of numbers of one length")
        return vectors

    def _error(self, reason: str) -> EmbeddingError:
        return EmbeddingError(f"{self.endpoint.where} (model {self.model_name}) {reason}")
