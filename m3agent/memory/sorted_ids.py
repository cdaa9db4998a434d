"""Positions of node ids in an ascending id array (the vector table's rows, the re-rank codes' rows)."""

from __future__ import annotations

import numpy as np


class SortedIds:
    """Where ids are in an ascending array of distinct ids. Node ids are nearly dense (lines, faces and voices
    share one sequence), so a table indexed by id (4 bytes an id, built on first use) answers with one read per
    id instead of a bisection through a million; ids too sparse for a table are bisected."""

    def __init__(self, ids: np.ndarray):
        self.ids = ids
        self._table: np.ndarray | None = None
        self._dense = bool(len(ids)) and int(ids[0]) >= 0 and int(ids[-1]) < 4 * len(ids) + 4096

    def find(self, needles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(position, found)`` of each needle; a needle not held gets some valid position and False."""
        needles = np.asarray(needles, np.int64).reshape(-1)
        if not len(self.ids):
            return np.zeros(len(needles), np.int64), np.zeros(len(needles), bool)
        if self._dense:
            if self._table is None:
                table = np.full(int(self.ids[-1]) + 1, -1, np.int32)
                table[self.ids] = np.arange(len(self.ids), dtype=np.int32)
                self._table = table
            inside = (needles >= 0) & (needles < len(self._table))
            if inside.all():
                pos = self._table[needles]
            else:
                pos = np.full(len(needles), -1, np.int32)
                pos[inside] = self._table[needles[inside]]
            found = pos >= 0
            return np.where(found, pos, 0), found
        pos = np.minimum(np.searchsorted(self.ids, needles), len(self.ids) - 1)
        return pos, self.ids[pos] == needles
