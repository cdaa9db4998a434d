"""Text embedders behind one interface; see :mod:`m3agent.models.embed.base` (built by m3agent.factory)."""

from m3agent.models.embed.base import TextEmbedder

__all__ = ["TextEmbedder"]
