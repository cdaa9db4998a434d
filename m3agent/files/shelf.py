"""Things opened once and kept: one value a key, shared by every caller and thread until the shelf is closed.

The app's workspace keeps its read-only memory graphs (by path) and chat models (by setting) on shelves; a
training worker's :class:`m3agent.train.tasks.MemoryShelf` keeps the hundreds of memory DBs its rows name.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Shelf(Generic[K, V]):
    """``opener(key)`` on a key's first :meth:`get`, its value kept and returned on every later one.

    Opening happens under ``lock`` (one of the shelf's own unless the owner shares one with other loading it
    does), so two threads asking for one key get one value. :meth:`close` forgets every value, then hands each
    to ``closer`` (outside the lock) where one is given."""

    def __init__(self, opener: Callable[[K], V], *, closer: Callable[[V], None] | None = None,
                 lock: threading.Lock | None = None):
        self._opener = opener
        self._closer = closer
        self._lock = lock if lock is not None else threading.Lock()
        self._values: dict[K, V] = {}

    def get(self, key: K) -> V:
        with self._lock:
            if key not in self._values:
                self._values[key] = self._opener(key)
            return self._values[key]

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __len__(self) -> int:
        return len(self._values)

    def close(self) -> None:
        with self._lock:
            values, self._values = list(self._values.values()), {}
        if self._closer is not None:
            for value in values:
                self._closer(value)
