"""What a training environment's searches show: results in the search's order (as in use) or shuffled, and
without the clips a task hides.

Two adapters trained on results in a fixed order learned where to look instead of what to read: one trained on
the video's order answered from the last clip shown, one trained on the search's order from the first, whatever
the question (docs/RESULTS.md). In the worlds the evidence clip is nearly always the search's first, so position
alone earns the reward there, and fails in use wherever two clips score alike ("What is Peter's job?" in the demo:
the pasta clip outranked the chef clip by 0.001). Shown in a seeded random order while training, position carries
nothing and only the lines' words can earn the reward; in use results keep the search's order.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterable
from typing import Any

CLIP_ORDERS = ("search", "shuffled")


class SearchView:
    """``memory`` whose search results pass through :meth:`shown` first; everything else is ``memory``'s."""

    def __init__(self, memory: Any):
        self._memory = memory

    def search(self, query: str, **kwargs: Any):
        return self.shown(query, self._memory.search(query, **kwargs))

    def shown(self, query: str, result):
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._memory, name)


class ShuffledClips(SearchView):
    """Searches that return their clips in a random order, the same for the same search (seeded by ``seed``, the
    query and the clips found), so a resumed run shows what the first showed."""

    def __init__(self, memory: Any, seed: int):
        super().__init__(memory)
        self._seed = seed

    def shown(self, query: str, result):
        clips = list(result.clips)
        random.Random(f"{self._seed}|{query}|{[c.id for c in clips]}").shuffle(clips)
        return dataclasses.replace(result, clips=clips)


class HiddenClips(SearchView):
    """Searches that never show ``clips`` (a task's evidence, hidden so that only a lesson answers it:
    :mod:`m3agent.train.lessons`)."""

    def __init__(self, memory: Any, clips: Iterable[int]):
        super().__init__(memory)
        self._hidden = frozenset(int(c) for c in clips)

    def shown(self, query: str, result):
        return dataclasses.replace(result, clips=[c for c in result.clips if c.id not in self._hidden],
                                   lines=[x for x in result.lines if x.get("clip") not in self._hidden])


def shown_in_order(memory: Any, order: str, seed: int, hidden: Iterable[int] = ()) -> Any:
    """``memory`` as a training environment searches it for ``order`` (:data:`CLIP_ORDERS`), without the
    ``hidden`` clips."""
    if order not in CLIP_ORDERS:
        raise ValueError(f"unknown clip order {order!r}; one of {', '.join(CLIP_ORDERS)}")
    memory = HiddenClips(memory, hidden) if hidden else memory
    return ShuffledClips(memory, seed) if order == "shuffled" else memory
