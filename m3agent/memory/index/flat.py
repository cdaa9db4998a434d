"""Exact inner-product search over a growable matrix: faiss's flat kernel, numpy as the fallback.

The matrix is exposed (``vectors``) so callers can score every row at once, which the memory
search needs for masks (``before_clip``, validity) and per-clip aggregation.
"""

from __future__ import annotations

import numpy as np

from m3agent.memory.index.base import VectorIndex, pad_topk, try_import_faiss


class FlatIndex(VectorIndex):
    def __init__(self, dim: int, use_faiss: bool = True):
        self.dim = dim
        self._use_faiss = use_faiss  # imported on the first search: scoring rows (what memory search does) is numpy
        self._matrix = np.zeros((0, dim), dtype=np.float32)
        self._ids = np.zeros(0, dtype=np.int64)
        self._n = 0

    def __len__(self) -> int:
        return self._n

    @property
    def vectors(self) -> np.ndarray:
        return self._matrix[: self._n]

    @property
    def ids(self) -> np.ndarray:
        return self._ids[: self._n]

    def adopt(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        """Hold ``vectors`` as they are (a memory-mapped file stays mapped) in place of an empty matrix; a
        later :meth:`add` copies them into a grown one, so they are never written to."""
        if self._n:
            raise ValueError("adopt needs an empty index")
        self._matrix = np.asarray(vectors, dtype=np.float32).reshape(-1, self.dim)
        self._ids = np.array(ids, dtype=np.int64).reshape(-1)
        self._n = len(self._ids)

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        vectors = np.asarray(vectors, dtype=np.float32).reshape(-1, self.dim)
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        need = self._n + len(ids)
        if need > len(self._matrix):
            cap = max(need, 2 * len(self._matrix), 64)
            matrix = np.zeros((cap, self.dim), dtype=np.float32)
            matrix[: self._n] = self._matrix[: self._n]
            id_buf = np.full(cap, -1, dtype=np.int64)
            id_buf[: self._n] = self._ids[: self._n]
            self._matrix, self._ids = matrix, id_buf
        self._matrix[self._n : need] = vectors
        self._ids[self._n : need] = ids
        self._n = need

    def scores(self, queries: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """``(n_queries, n_rows)`` inner products with every row (or the given rows)."""
        matrix = self.vectors if rows is None else self.vectors[rows]
        return np.asarray(queries, dtype=np.float32).reshape(-1, self.dim) @ matrix.T

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        queries = np.ascontiguousarray(queries, dtype=np.float32).reshape(-1, self.dim)
        k_eff = min(k, self._n)
        if k_eff == 0:
            return pad_topk(np.zeros((len(queries), 0), np.float32), np.zeros((len(queries), 0), np.int64), k)
        faiss = try_import_faiss() if self._use_faiss else None
        if faiss is not None:
            scores, rows = faiss.knn(queries, np.ascontiguousarray(self.vectors), k_eff, metric=faiss.METRIC_INNER_PRODUCT)
        else:
            all_scores = self.scores(queries)
            rows = np.argpartition(-all_scores, k_eff - 1, axis=1)[:, :k_eff]
            part = np.take_along_axis(all_scores, rows, axis=1)
            order = np.argsort(-part, axis=1, kind="stable")
            rows = np.take_along_axis(rows, order, axis=1)
            scores = np.take_along_axis(part, order, axis=1)
        return pad_topk(scores.astype(np.float32), self.ids[rows], k)
