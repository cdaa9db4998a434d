"""The as-of rule, written once: which text lines a reader sees.

Without ``before_clip`` a reader sees today's memory: every line not superseded. With ``before_clip``
it sees the memory as it was when clip ``before_clip`` had been memorized (inclusive, M3-Agent's
convention): lines written at or before that clip, valid from at or before it, and not yet superseded
then. The same function serves one stored node and whole numpy columns of the vector cache.
"""

from __future__ import annotations

import numpy as np

#: ``dead_at`` of a line that was never superseded
NEVER = int(np.iinfo(np.int32).max)


def visible(clip, valid_from, dead_at, before_clip: int | None):
    """True where a line written at ``clip``, valid from ``valid_from`` and superseded at ``dead_at``
    (``NEVER`` if it never was) is visible; scalars give a bool, arrays a boolean mask."""
    if before_clip is None:
        return dead_at == NEVER
    return (clip <= before_clip) & (valid_from <= before_clip) & (dead_at > before_clip)


def node_visible(node, before_clip: int | None) -> bool:
    """The rule for one :class:`~m3agent.memory.model.TextNode`."""
    start = node.clip if node.valid_from is None else node.valid_from
    dead = NEVER if node.invalidated_at is None else node.invalidated_at
    return bool(visible(node.clip, start, dead, before_clip))
