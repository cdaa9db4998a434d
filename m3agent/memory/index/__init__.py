"""Vector indexes behind one interface; see :mod:`m3agent.memory.index.base`."""

from m3agent.memory.index.base import VectorIndex

__all__ = ["VectorIndex"]
