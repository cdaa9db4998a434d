"""Retiring a line: the one edit a memory-building policy needs beyond writing new lines.

A retired line is superseded at a clip, as the writer supersedes a contradicted fact: today's memory no
longer shows it, and an as-of reader before that clip still does. ``by`` names the line that replaced it
(an update); None means it was dropped (a delete). Lines are never rewritten in place, so memory keeps its
history the same way whether a perception memorizer or a policy wrote it.
"""

from __future__ import annotations

from collections.abc import Sequence

from m3agent.memory.model import TextNode
from m3agent.memory.writer import MemoryWriter


def live_lines(writer: MemoryWriter, video_id: int, node_ids: Sequence[int] | None = None) -> dict[int, TextNode]:
    """The lines among ``node_ids`` (None: all its semantic and episodic lines) that belong to ``video_id``
    and are not superseded, in id order."""
    nodes = writer.store.text_nodes(video_id, ids=None if node_ids is None else list(node_ids))
    return {n.id: n for n in nodes if n.invalidated_at is None}


def retire_lines(writer: MemoryWriter, node_ids: Sequence[int], at_clip: int, by: int | None = None) -> None:
    """Supersede ``node_ids`` at ``at_clip`` (replaced by line ``by``, or dropped when None) in one
    transaction, and bring the writer's caches in step."""
    store = writer.store
    with writer.lock:
        with store.transaction():
            for node_id in node_ids:
                store.set_invalidated(node_id, by, at_clip)
        vectors = writer.vectors.loaded  # None: loaded lazily later, from rows that already say it
        if vectors is not None:
            for node_id in node_ids:
                vectors.invalidate(node_id, at_clip)
        writer.forget_caches()  # semantic peers of the video may include a retired line
        writer.on_change()
