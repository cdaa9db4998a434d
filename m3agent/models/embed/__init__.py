"""Text embedders behind one interface; see :mod:`m3agent.models.embed.base`."""

from m3agent.models.embed.base import TextEmbedder, build_embedder

__all__ = ["TextEmbedder", "build_embedder"]
