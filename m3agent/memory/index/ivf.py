"""Approximate search for large memories: faiss IVF with 8-bit scalar-quantised codes.

Coarse lists are scanned for ``nprobe`` centroids; candidates are re-scored exactly by the owner
(``refine``), so the codes only have to rank the right vectors into a short list. ``nprobe`` is
calibrated at build time on the data itself to reach a target recall@10 against exact search.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Callable

import numpy as np

from m3agent.memory.index.base import VectorIndex, pad_topk

_MAGIC = b"M3IVF001"
NPROBE_STEPS = (4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)

Refine = Callable[[np.ndarray], np.ndarray]  # ids -> their exact vectors (rows in id order)


def choose_nlist(n: int) -> int:
    return int(min(8192, max(16, 2 * math.sqrt(max(n, 1)))))


class IVFIndex(VectorIndex):
    def __init__(self, dim: int, nlist: int = 0, nprobe: int = 0, refine_factor: int = 4):
        import faiss

        self._faiss = faiss
        self.dim = dim
        self.nlist = nlist
        self.nprobe = nprobe or 32
        self.refine_factor = refine_factor
        self.refine: Refine | None = None
        self.meta: dict = {}
        self._index = None

    # ------------------------------------------------------------------ build
    def build(self, ids: np.ndarray, vectors: np.ndarray, target_recall: float = 0.95,
              nprobe: int = 0, seed: int = 0, progress: Callable[[str], None] | None = None) -> None:
        """Train centroids on a sample, add everything, then calibrate ``nprobe`` (unless given)."""
        faiss = self._faiss
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        n = len(vectors)
        self.nlist = min(self.nlist or choose_nlist(n), max(1, n))  # k-means needs a point per list
        rng = np.random.default_rng(seed)
        sample = vectors[rng.choice(n, size=min(n, 40 * self.nlist), replace=False)]
        quantizer = faiss.IndexFlatIP(self.dim)
        index = faiss.IndexIVFScalarQuantizer(
            quantizer, self.dim, self.nlist, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
        )
        index.cp.niter = 10
        index.cp.seed = seed
        if progress:
            progress(f"training {self.nlist} IVF lists on {len(sample)} vectors")
        index.train(sample)
        if progress:
            progress(f"adding {n} vectors")
        index.add_with_ids(vectors, np.asarray(ids, dtype=np.int64))
        self._index = index
        if nprobe:
            self.nprobe = nprobe
        else:
            self.nprobe = self._calibrate(np.asarray(ids, dtype=np.int64), vectors, target_recall, rng)
        if progress:
            progress(f"nprobe={self.nprobe}")

    def _calibrate(self, ids: np.ndarray, vectors: np.ndarray, target: float, rng) -> int:
        """Smallest nprobe whose refined recall@10 on synthetic probe queries reaches ``target``.

        A probe is the normalised sum of three random stored vectors, moved by noise to cosine
        0.7 with that sum: it sits between several regions of the data, as real questions do
        (their best match is typically ~0.6 cosine), so its neighbours spread over several lists.
        Measured on MiniLM data at 100k and 1M nodes this proxy is slightly harder than real
        M3-Bench questions, so a target of 0.95 gives about 0.97 on real ones (docs/BENCHMARKS.md).
        """
        n, k = len(vectors), 10
        if n <= k:
            return self.nlist
        m = min(300, n)
        queries = vectors[rng.choice(n, size=(m, 3))].sum(axis=1)
        queries /= np.maximum(np.linalg.norm(queries, axis=1, keepdims=True), 1e-12)
        noise = rng.standard_normal((m, self.dim)).astype(np.float32)
        noise /= np.linalg.norm(noise, axis=1, keepdims=True)
        queries = 0.7 * queries + math.sqrt(1 - 0.7**2) * noise
        queries = np.ascontiguousarray(queries / np.linalg.norm(queries, axis=1, keepdims=True), dtype=np.float32)
        _, truth_rows = self._faiss.knn(queries, vectors, k, metric=self._faiss.METRIC_INNER_PRODUCT)
        truth = ids[truth_rows]
        row_of = {int(i): r for r, i in enumerate(ids)}
        saved = self.refine
        self.refine = lambda q_ids: vectors[[row_of[int(i)] for i in q_ids]]
        try:
            for nprobe in [p for p in NPROBE_STEPS if p < self.nlist] + [self.nlist]:
                self.nprobe = nprobe
                _, found = self.search(queries, k)
                recall = np.mean([len(set(a) & set(b)) / k for a, b in zip(found.tolist(), truth.tolist())])
                self.meta["calibrated_recall"] = float(recall)
                if recall >= target:
                    return nprobe
            return self.nlist
        finally:
            self.refine = saved

    # ------------------------------------------------------------------ VectorIndex
    def __len__(self) -> int:
        return 0 if self._index is None else int(self._index.ntotal)

    @property
    def trained(self) -> bool:
        return self._index is not None

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        if self._index is None:
            raise RuntimeError("IVFIndex.add before build()")
        self._index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1, self.dim),
                                 np.asarray(ids, dtype=np.int64))

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        queries = np.ascontiguousarray(queries, dtype=np.float32).reshape(-1, self.dim)
        if self._index is None or len(self) == 0:
            return pad_topk(np.zeros((len(queries), 0), np.float32), np.zeros((len(queries), 0), np.int64), k)
        self._index.nprobe = self.nprobe
        fetch = k * self.refine_factor if self.refine is not None else k
        scores, ids = self._index.search(queries, fetch)
        if self.refine is None:
            return pad_topk(scores, ids, k)
        out_s = np.full((len(queries), k), -np.inf, dtype=np.float32)
        out_i = np.full((len(queries), k), -1, dtype=np.int64)
        for q, (row_ids, query) in enumerate(zip(ids, queries)):
            row_ids = row_ids[row_ids >= 0]
            if len(row_ids) == 0:
                continue
            exact = self.refine(row_ids) @ query
            order = np.argsort(-exact, kind="stable")[:k]
            out_s[q, : len(order)] = exact[order]
            out_i[q, : len(order)] = row_ids[order]
        return out_s, out_i

    # ------------------------------------------------------------------ persistence
    def save(self, path: str) -> None:
        blob = self._faiss.serialize_index(self._index)
        header = json.dumps({**self.meta, "nlist": self.nlist, "nprobe": self.nprobe, "dim": self.dim}).encode()
        with open(path, "wb") as fh:
            fh.write(_MAGIC + struct.pack("<I", len(header)) + header)
            fh.write(memoryview(blob))

    @classmethod
    def load(cls, path: str) -> IVFIndex:
        """Read the index streaming from the file: a copy of the whole file in memory beside the index
        would double the peak (400 MB more at 1M lines)."""
        with open(path, "rb") as fh:
            head = fh.read(len(_MAGIC) + 4)
            if not head.startswith(_MAGIC) or len(head) < len(_MAGIC) + 4:
                raise ValueError(f"{path} is not an m3agent IVF index")
            (size,) = struct.unpack_from("<I", head, len(_MAGIC))
            header = json.loads(fh.read(size))
            index = cls(int(header["dim"]), int(header["nlist"]), int(header["nprobe"]))
            index.meta = {k: v for k, v in header.items() if k not in ("nlist", "nprobe", "dim")}
            index._index = index._faiss.read_index(index._faiss.PyCallbackIOReader(fh.read))
        return index


def read_header(path: str) -> dict:
    with open(path, "rb") as fh:
        head = fh.read(len(_MAGIC) + 4)
        if not head.startswith(_MAGIC):
            raise ValueError(f"{path} is not an m3agent IVF index")
        (size,) = struct.unpack_from("<I", head, len(_MAGIC))
        return json.loads(fh.read(size))


