"""The vector-index contract: inner-product search over unit vectors, higher score = more similar."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np


class VectorIndex(ABC):
    """Maps int64 ids to float32 unit vectors and finds the top-k by inner product.

    ``search`` returns ``(scores, ids)`` of shape ``(n_queries, k)``, best first; missing results
    are padded with id -1 and score -inf.
    """

    dim: int

    @abstractmethod
    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None: ...

    @abstractmethod
    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]: ...

    @abstractmethod
    def __len__(self) -> int: ...

    def save(self, path: str) -> None:
        raise NotImplementedError(f"{type(self).__name__} is rebuilt from the DB, not saved")


def try_import_faiss():
    """faiss if installed, else None (callers fall back to numpy)."""
    try:
        import faiss
    except ImportError:
        return None
    return faiss


def pad_topk(scores: np.ndarray, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Pad ``(m, j)`` results with j < k to ``(m, k)`` with -inf / -1."""
    m, j = scores.shape
    if j >= k:
        return scores[:, :k], ids[:, :k]
    out_s = np.full((m, k), -np.inf, dtype=np.float32)
    out_i = np.full((m, k), -1, dtype=np.int64)
    out_s[:, :j], out_i[:, :j] = scores, ids
    return out_s, out_i
