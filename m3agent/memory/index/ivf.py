"""Approximate search for large memories: faiss IVF with 4-bit product-quantised codes scanned in SIMD
registers ("fast scan", :data:`CODEC`; a sub-quantizer per 2 dimensions, dim/4 bytes a vector), or 8-bit
scalar codes for small memories.

Coarse lists are scanned for ``nprobe`` centroids; a short list (:meth:`IVFIndex.shortlist`) of candidates
is re-scored by the owner (from the 8-bit copies in ``rerank``, then the best exactly, ``refine``), so the
codes only have to rank the right vectors into it. ``nprobe`` is calibrated at build time on the data itself to reach a target
recall@10 against exact search. An index file without the ``codec`` of this code (an older 8-bit one, ten
times slower to scan) is not used: it is rebuilt like one of another DB state (:func:`current`).

The file is faiss's own serialization, then the re-rank codes, then a trailer (JSON header, its u32 length, ``_MAGIC``), so that
faiss can memory-map its inverted lists on open (a few milliseconds at 1M lines instead of reading 400 MB);
files of the older layout (header first) are still read, whole.
"""

from __future__ import annotations

import json
import math
import os
import struct
from collections.abc import Callable

import numpy as np

from m3agent.memory.index.base import VectorIndex, pad_topk
from m3agent.memory.index.rerank import RerankCodes

_MAGIC = b"M3IVF002"  # at the end of the file
_LEGACY_MAGIC = b"M3IVF001"  # at the start, the faiss index after the header
_TRAILER = struct.Struct("<I8s")
NPROBE_STEPS = (4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
CODEC = "pq4fs2"  # IVF + PQ with 4-bit codes, fast scan; "sq8" (IVF + 8-bit scalar codes) below PQ_MIN_LINES
PQ_MIN_LINES = 4096  # fewer lines train 16-centroid sub-quantizers poorly; their scan is cheap anyway
#: dimensions per 4-bit sub-quantizer of each PQ codec ("pq4fs": files written before 2026-11-25, still read)
PQ_BLOCK = {"pq4fs2": 2, "pq4fs": 4}
#: candidates re-scored per result wanted (at least 64 wanted: :meth:`IVFIndex.shortlist`). Measured at 1M
#: MiniLM lines: with 2-dimensional blocks a short list of 256 reaches the recall 4-dimensional blocks reach
#: with 768 (0.953 vs 0.946 at nprobe 64), and re-ranking costs about 1 us a candidate.
REFINE_FACTOR = {"pq4fs2": 4, "pq4fs": 12, "sq8": 4}

Refine = Callable[[np.ndarray], np.ndarray]  # ids -> their exact vectors (rows in id order)


def choose_nlist(n: int) -> int:
    return int(min(8192, max(16, 2 * math.sqrt(max(n, 1)))))


def pq_subquantizers(dim: int, block: int = PQ_BLOCK[CODEC]) -> int:
    """Sub-quantizers of a 4-bit PQ for ``dim``: a ``block``-dimensional block each where ``dim`` allows."""
    for size in (block, 2, 4, 3, 6, 8, 1):
        if dim % size == 0:
            return dim // size
    return dim


def current(meta: dict) -> bool:
    """Whether an index file's header says it was built with a codec of this code and holds re-rank codes
    (older files have neither)."""
    return meta.get("codec") in REFINE_FACTOR and "rerank" in meta


class IVFIndex(VectorIndex):
    def __init__(self, dim: int, nlist: int = 0, nprobe: int = 0, refine_factor: int = 0):
        import faiss

        self._faiss = faiss
        self.dim = dim
        self.nlist = nlist
        self.nprobe = nprobe or 32
        self.refine_factor = refine_factor or REFINE_FACTOR["sq8"]
        self.refine: Refine | None = None
        self.meta: dict = {}
        self._index = None
        self._mapped = None  # the open file whose lists are memory-mapped: read-only until copied to memory
        self.legacy = False  # read from a file of the older layout (worth writing again)
        self.rerank: RerankCodes | None = None  # 8-bit vectors to order a short list by (None in older files)

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
        codec = CODEC if n >= PQ_MIN_LINES else "sq8"
        if codec in PQ_BLOCK:
            blocks = pq_subquantizers(self.dim, PQ_BLOCK[codec])
            index = faiss.index_factory(self.dim, f"IVF{self.nlist},PQ{blocks}x4fs", faiss.METRIC_INNER_PRODUCT)
        else:
            quantizer = faiss.IndexFlatIP(self.dim)
            index = faiss.IndexIVFScalarQuantizer(
                quantizer, self.dim, self.nlist, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
            )
        self.meta["codec"] = codec
        self.refine_factor = REFINE_FACTOR[codec]
        index.cp.niter = 10
        index.cp.seed = seed
        if progress:
            progress(f"training {self.nlist} IVF lists on {len(sample)} vectors")
        index.train(sample)
        if progress:
            progress(f"adding {n} vectors")
        index.add_with_ids(vectors, np.asarray(ids, dtype=np.int64))
        self._index = index
        self.rerank = RerankCodes.encode(ids, vectors)
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

    @property
    def mapped(self) -> bool:
        return self._mapped is not None

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        if self._index is None:
            raise RuntimeError("IVFIndex.add before build()")
        self._in_memory()
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1, self.dim)
        self._index.add_with_ids(vectors, np.asarray(ids, dtype=np.int64))
        if self.rerank is not None:
            self.rerank.add(ids, vectors)

    def shortlist(self, k: int) -> int:
        """How many candidates to re-score exactly for the best ``k`` (what :meth:`search` and the owner's
        filtered search take, and what ``nprobe`` is calibrated with)."""
        return max(k, 64) * self.refine_factor

    def candidates(self, queries: np.ndarray, n: int) -> np.ndarray:
        """The ``n`` best ids of each query by their codes, ``(queries, n)``, padded with -1."""
        queries = np.ascontiguousarray(queries, dtype=np.float32).reshape(-1, self.dim)
        if self._index is None or len(self) == 0:
            return np.full((len(queries), 0), -1, np.int64)
        self._index.nprobe = self.nprobe
        threads = self._faiss.omp_get_max_threads()
        self._faiss.omp_set_num_threads(1)  # a few queries: threads cost more to start than they save
        try:
            return self._index.search(queries, min(n, len(self)))[1]
        finally:
            self._faiss.omp_set_num_threads(threads)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        queries = np.ascontiguousarray(queries, dtype=np.float32).reshape(-1, self.dim)
        if self._index is None or len(self) == 0:
            return pad_topk(np.zeros((len(queries), 0), np.float32), np.zeros((len(queries), 0), np.int64), k)
        self._index.nprobe = self.nprobe
        fetch = self.shortlist(k) if self.refine is not None else k
        scores, ids = self._index.search(queries, min(fetch, len(self)))
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
    def _in_memory(self) -> None:
        """Mapped lists can neither grow nor be written elsewhere: read them into memory from the same file."""
        if self._mapped is not None:
            with self._mapped as fh:
                fh.seek(0)
                self._index = self._faiss.read_index(self._faiss.PyCallbackIOReader(fh.read))
            self._mapped = None

    def save(self, path: str) -> None:
        self._in_memory()
        self._faiss.write_index(self._index, path)
        with open(path, "ab") as fh:
            rerank = {"rerank": self.rerank.write(fh)} if self.rerank is not None else {}
            header = json.dumps({**self.meta, "nlist": self.nlist, "nprobe": self.nprobe, "dim": self.dim,
                                 **rerank}).encode()
            fh.write(header + _TRAILER.pack(len(header), _MAGIC))

    @classmethod
    def load(cls, path: str) -> IVFIndex:
        """Map the index's lists from the file (kept open, so that :meth:`add` reads the same file even after
        a writer replaced it); an older file is read streaming, whole."""
        fh = open(path, "rb")
        try:
            header, legacy = _read_header(fh)
            index = cls(int(header["dim"]), int(header["nlist"]), int(header["nprobe"]))
            index.meta = {k: v for k, v in header.items() if k not in ("nlist", "nprobe", "dim", "rerank")}
            if "rerank" in header:
                index.rerank = RerankCodes.map(path, header["rerank"])
            index.refine_factor = REFINE_FACTOR.get(index.meta.get("codec"), REFINE_FACTOR["sq8"])
            if legacy:
                index._index = index._faiss.read_index(index._faiss.PyCallbackIOReader(fh.read))
                index.legacy = True
                fh.close()
            else:
                flags = index._faiss.IO_FLAG_MMAP | index._faiss.IO_FLAG_READ_ONLY
                index._index = index._faiss.read_index(path, flags)
                index._mapped = fh
        except BaseException:
            fh.close()
            raise
        return index


def _read_header(fh) -> tuple[dict, bool]:
    """The header of an open index file and whether it has the older layout (then ``fh`` is left at the index)."""
    head = fh.read(len(_LEGACY_MAGIC) + 4)
    if head.startswith(_LEGACY_MAGIC) and len(head) == len(_LEGACY_MAGIC) + 4:
        (size,) = struct.unpack_from("<I", head, len(_LEGACY_MAGIC))
        return json.loads(fh.read(size)), True
    end = fh.seek(0, os.SEEK_END)
    if end < _TRAILER.size:
        raise ValueError(f"{fh.name} is not an m3agent IVF index")
    fh.seek(end - _TRAILER.size)
    size, magic = _TRAILER.unpack(fh.read(_TRAILER.size))
    if magic != _MAGIC or size > end - _TRAILER.size:
        raise ValueError(f"{fh.name} is not an m3agent IVF index")
    fh.seek(end - _TRAILER.size - size)
    return json.loads(fh.read(size)), False


def read_header(path: str) -> dict:
    with open(path, "rb") as fh:
        return _read_header(fh)[0]
