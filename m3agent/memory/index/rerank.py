"""8-bit copies of the vectors an IVF index holds, to re-rank its short list.

The IVF codes only rank candidates roughly, so a search re-scores a short list of several hundred. Reading
those from the full-precision vectors (1.5 kB a line, a million lines mapped from a 1.5 GB file) touches a
page per candidate: over many searches the whole file becomes resident and each search pays the misses.
One byte a dimension (each dimension's range split in 255 steps) scores as the full vectors do to about
1e-3 of cosine, so the short list is ordered from these (a quarter of the bytes, a quarter of the memory
ever resident) and only the few lines a search returns are scored exactly.

The codes are stored after the IVF index in its file (see :mod:`m3agent.memory.index.ivf`) and mapped from
there; lines added after the file was written get codes in memory if their values lie in the built range.
"""

from __future__ import annotations

import numpy as np

from m3agent.memory.sorted_ids import SortedIds


class RerankCodes:
    def __init__(self, ids: np.ndarray, low: np.ndarray, step: np.ndarray, codes: np.ndarray):
        """``ids`` ascending, ``codes`` their rows (uint8, ``(len(ids), dim)``); a value is ``low + step * code``."""
        self.ids, self.low, self.step, self.codes = ids, low, step, codes
        self._rows = np.asarray(codes).view(np.dtype((np.void, codes.shape[1]))).reshape(-1)  # a row a copy
        self._sorted = SortedIds(ids)
        self._extra: dict[int, np.ndarray] = {}

    @classmethod
    def encode(cls, ids: np.ndarray, vectors: np.ndarray) -> RerankCodes:
        ids = np.asarray(ids, np.int64)
        order = np.argsort(ids, kind="stable")
        low = vectors.min(axis=0).astype(np.float32)
        step = np.maximum((vectors.max(axis=0) - low) / 255.0, 1e-12).astype(np.float32)
        codes = np.empty((len(ids), vectors.shape[1]), np.uint8)
        for start in range(0, len(ids), 65_536):  # in blocks: a float copy of a million rows would be 1.5 GB
            rows = order[start : start + 65_536]
            codes[start : start + len(rows)] = cls._quantize(vectors[rows], low, step)
        return cls(ids[order], low, step, codes)

    @staticmethod
    def _quantize(vectors: np.ndarray, low: np.ndarray, step: np.ndarray) -> np.ndarray:
        return np.clip(np.rint((vectors - low) / step), 0, 255).astype(np.uint8)

    def __len__(self) -> int:
        return len(self.ids) + len(self._extra)

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        """Codes for lines added after the build; a line with a value outside the built range gets none (it
        would be clipped) and is scored from its exact vector."""
        vectors = np.asarray(vectors, np.float32).reshape(len(ids), -1)
        fits = ((vectors >= self.low) & (vectors <= self.low + 255 * self.step)).all(axis=1)
        codes = self._quantize(vectors[fits], self.low, self.step)
        for node_id, code in zip(np.asarray(ids, np.int64)[fits].tolist(), codes):
            self._extra[node_id] = code

    def _codes(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(codes, held)`` of ``ids`` (zero rows for ids not held)."""
        ids = np.asarray(ids, np.int64).reshape(-1)
        pos, held = self._sorted.find(ids)
        dim = self.codes.shape[1]
        if held.all():
            return self._rows[pos].view(np.uint8).reshape(len(ids), dim), held
        codes = np.zeros((len(ids), dim), np.uint8)
        codes[held] = self._rows[pos[held]].view(np.uint8).reshape(-1, dim)
        if self._extra:
            for i in np.flatnonzero(~held).tolist():
                code = self._extra.get(int(ids[i]))
                if code is not None:
                    codes[i], held[i] = code, True
        return codes, held

    def approximate(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(vectors, held)``: the decoded vectors of ``ids`` (rows of ids not held are zero) and which are held."""
        codes, held = self._codes(ids)
        out = codes.astype(np.float32)
        out *= self.step
        out += self.low
        out[~held] = 0.0
        return out, held

    def scores(self, queries: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(scores, held)``: each query's inner product with each id's decoded vector, ``(queries, ids)``,
        without decoding (``q . (low + step * c) = q . low + (q * step) . c``); columns of ids not held are 0."""
        codes, held = self._codes(ids)
        queries = np.asarray(queries, np.float32).reshape(-1, codes.shape[1])
        out = (queries * self.step) @ codes.T.astype(np.float32) + (queries @ self.low)[:, None]
        out[:, ~held] = 0.0
        return out, held

    def write(self, fh) -> dict:
        """Append the codes (with the added lines') to ``fh``; what :meth:`map` needs to find them again."""
        ids, codes = self.ids, self.codes
        if self._extra:
            more = np.fromiter(self._extra, np.int64, len(self._extra))
            ids = np.concatenate([ids, more])
            order = np.argsort(ids, kind="stable")
            ids = ids[order]
            codes = np.concatenate([codes, np.stack([self._extra[i] for i in more.tolist()])])[order]
        offset = fh.tell()
        for array in (ids.astype("<i8"), self.low.astype("<f4"), self.step.astype("<f4")):
            fh.write(array.tobytes())
        for start in range(0, len(codes), 65_536):
            fh.write(np.ascontiguousarray(codes[start : start + 65_536]).tobytes())
        return {"offset": offset, "n": len(ids), "dim": int(codes.shape[1])}

    @classmethod
    def map(cls, path: str, where: dict) -> RerankCodes:
        offset, n, dim = int(where["offset"]), int(where["n"]), int(where["dim"])
        ids = np.array(np.memmap(path, "<i8", "r", offset, (n,)))  # 8 bytes a line, read (looked up each search)
        offset += 8 * n
        low = np.array(np.memmap(path, "<f4", "r", offset, (dim,)))
        step = np.array(np.memmap(path, "<f4", "r", offset + 4 * dim, (dim,)))
        codes = np.memmap(path, np.uint8, "r", offset + 8 * dim, (n, dim))
        return cls(ids, low, step, codes)
