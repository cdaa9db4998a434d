"""The text-embedder contract the memory core relies on."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from m3agent.config import EmbedderConfig


class TextEmbedder(ABC):
    """Maps texts to L2-normalised float32 vectors, so inner product = cosine similarity."""

    #: a stable identifier stored in the memory DB; vectors of different embedders never mix
    name: str
    dim: int
    #: the clip-score threshold search uses unless ``memory.search.threshold`` is set: where related
    #: texts start, which depends on the model (M3-Agent's 0.5 suits OpenAI's text-embedding-3-large)
    relevance_threshold: float = 0.5
    #: the score at which a feedback lesson is about the question asked, not only related to it (its answer may
    #: be copied); None: ``relevance_threshold``, for an embedder nobody calibrated (see bench/lesson_gate.py)
    lesson_threshold: float | None = None

    @classmethod
    def from_config(cls, config: EmbedderConfig) -> TextEmbedder:
        """Build from :class:`m3agent.config.EmbedderConfig`; an embedder with no settings needs nothing."""
        return cls()

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return an ``(len(texts), dim)`` float32 array of unit vectors (zero rows for empty text)."""

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """Unit-normalise rows in float32; all-zero rows stay zero instead of becoming NaN."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors[None, :]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)

