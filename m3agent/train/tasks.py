"""What one training row asks and the memory it is asked of, shared by the dataset and the verl scripts.

A control row (see :mod:`m3agent.train.dataset`) names its memory DB by path; a rollout worker answers
thousands of rows over a few hundred DBs, so :class:`MemoryShelf` opens each one once, read-only, and keeps
it. A memory-build row carries its whole task (the stream and the held-out questions) as JSON text.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from m3agent.config import Config
from m3agent.factory import SharedEmbedders, open_memory
from m3agent.files.shelf import Shelf
from m3agent.memory.errors import MemoryStoreError

if TYPE_CHECKING:
    from m3agent.memory.graph import MemoryGraph
    from m3agent.models.embed.base import TextEmbedder

AGENT_NAME = "m3agent_control"  # the verl agent loop rows are routed to (pipelines/train/agent_loop.py)
MEMORY_BUILD_AGENT = "m3agent_memory_build"  # the same loop driving the memory-build env
TOOL_NAME = "memory_search"  # the verl tool's function name (pipelines/train/config/tool_config.yaml)


def task_of(extra_info: Mapping[str, Any], ground_truth: str | None = None) -> dict[str, Any]:
    """The control env's task from a row's ``extra_info`` (and ``reward_model.ground_truth``)."""
    task = {key: extra_info.get(key) for key in ("question", "video", "before_clip", "question_id")}
    task["answer"] = ground_truth if ground_truth is not None else extra_info.get("answer")
    return task


def memory_task_of(extra_info: Mapping[str, Any]) -> dict[str, Any]:
    """The memory-build env's task from a row's ``extra_info``: JSON text, since a stream mixes record objects
    and plain strings, which no single Parquet column type holds."""
    return json.loads(extra_info["task"])


def video_in(graph: MemoryGraph, key: str, video_path: str = "") -> str:
    """The name, in ``graph``, of the annotation's video ``key``: its only video, or the one named by the key or
    the video file's name; :class:`MemoryStoreError` naming what the DB holds otherwise."""
    videos = graph.videos()
    if len(videos) == 1:
        return videos[0].name
    file_name = PurePosixPath(video_path.replace("\\", "/")).name if video_path else ""
    for name in filter(None, (key, file_name, Path(file_name).stem)):
        if any(v.name == name for v in videos):
            return name
    names = ", ".join(repr(v.name) for v in videos) or "none"
    raise MemoryStoreError(f"the memory holds {len(videos)} videos ({names}), none named {key!r}")


class MemoryShelf:
    """Read-only memory graphs by DB path, each opened on first use and kept for the process's life.

    Graphs written with the same embedder share one instance of it (a worker may hold hundreds of DBs, and
    each would otherwise load its own model), and a graph is fully loaded (embedder, vectors) before it is
    handed out, so rollouts searching it from several threads only ever read it."""

    def __init__(self, config: Config):
        self.config = config
        self._lock = threading.Lock()  # opening graphs
        self._graphs: Shelf[str, MemoryGraph] = Shelf(self._open, closer=lambda graph: graph.close(), lock=self._lock)
        self._embedders = SharedEmbedders(config.embedder)

    def get(self, path: str | Path) -> MemoryGraph:
        return self._graphs.get(str(Path(path).resolve()))

    def _open(self, path: str) -> MemoryGraph:
        graph = open_memory(path, self.config, embedders=self._embedders, readonly=True)
        try:
            graph.embedder_required()
            graph.vectors  # noqa: B018  (loads the vectors now, under the lock)
        except BaseException:
            graph.close()
            raise
        return graph

    def embedder(self) -> TextEmbedder:
        """The configured text embedder, built once per process: what the memory-build env's fresh memories
        are written with (an empty DB records no embedder of its own)."""
        return self._embedders.configured()

    def close(self) -> None:
        self._graphs.close()
