"""Import M3-Agent ``VideoGraph`` pickles without ever running arbitrary code.

The unpickler resolves only a short allow-list: M3-Agent's ``VideoGraph``/``VideoGraph.Node``
(mapped to inert stand-ins), numpy's array reconstruction, and plain builtins. Anything else in
the file is refused with :class:`UnsafePickleError`.
"""

from __future__ import annotations

import base64
import binascii
import io
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from m3agent.memory.graph import MemoryGraph
from m3agent.memory.tags import rewrite_tags


class UnsafePickleError(pickle.UnpicklingError):
    pass


class M3Node:
    """Stand-in for ``VideoGraph.Node``: fields id, type, embeddings, metadata."""

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)


class M3VideoGraph:
    """Stand-in for ``VideoGraph``: fields nodes, edges, text_nodes, text_nodes_by_clip, ..."""

    Node = M3Node

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)


_GRAPH_MODULES = ("videograph", "mmagent.videograph")
_ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("builtins", "set"), ("builtins", "frozenset"), ("builtins", "complex"),
    ("collections", "OrderedDict"), ("collections", "defaultdict"),
    ("builtins", "list"), ("builtins", "dict"), ("builtins", "tuple"),
}


class RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module in _GRAPH_MODULES and name == "VideoGraph":
            return M3VideoGraph
        if module in _GRAPH_MODULES and name in ("VideoGraph.Node", "Node"):
            return M3Node
        if (module, name) in _ALLOWED:
            if module == "builtins":
                import builtins

                return getattr(builtins, name)
            if module == "collections":
                import collections

                return getattr(collections, name)
            import importlib

            return getattr(importlib.import_module(module), name)
        raise UnsafePickleError(f"refusing to load {module}.{name} from a memory pickle")


def load_m3_pickle(path: str | Path) -> M3VideoGraph:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise FileNotFoundError(f"cannot read {path}: {exc}") from exc
    try:
        graph = RestrictedUnpickler(io.BytesIO(data)).load()
    except UnsafePickleError:
        raise
    except Exception as exc:
        raise pickle.UnpicklingError(f"{path} is not a readable M3-Agent memory pickle: {exc}") from exc
    if not isinstance(graph, M3VideoGraph) or not isinstance(getattr(graph, "nodes", None), dict):
        raise pickle.UnpicklingError(f"{path} does not hold an M3-Agent VideoGraph")
    return graph


def _crop_bytes(item: Any) -> bytes | None:
    if isinstance(item, bytes | bytearray):
        return bytes(item)
    if isinstance(item, str):
        try:
            return base64.b64decode(item, validate=True)
        except (binascii.Error, ValueError):
            return None
    return None


def import_m3_graph(src: M3VideoGraph, graph: MemoryGraph, video_name: str, *, clip_seconds: float = 30.0,
                    video_path: str | None = None) -> dict:
    """Copy an M3-Agent graph into ``graph`` as video ``video_name``; text is re-embedded with the
    graph's embedder (M3-Agent's 3072-d API vectors do not match a local query embedder)."""
    type_map = {"img": "face", "voice": "voice", "episodic": "episodic", "semantic": "semantic"}
    nodes = {int(k): v for k, v in src.nodes.items()}
    by_clip: dict[int, list[int]] = {}
    for node_id, node in sorted(nodes.items()):
        kind = type_map.get(getattr(node, "type", None))
        if kind is None:
            raise pickle.UnpicklingError(f"node {node_id} has unknown type {getattr(node, 'type', None)!r}")
        if kind in ("episodic", "semantic"):
            clip = int((node.metadata or {}).get("timestamp", 0))
            by_clip.setdefault(clip, []).append(node_id)
    entity_clips: dict[int, int] = {}
    edges = getattr(src, "edges", {}) or {}
    for (a, b), _w in edges.items():
        a, b = int(a), int(b)
        for ent, txt in ((a, b), (b, a)):
            if ent in nodes and nodes[ent].type in ("img", "voice") and txt in nodes and nodes[txt].type in (
                "episodic", "semantic"
            ):
                clip = int(nodes[txt].metadata.get("timestamp", 0))
                entity_clips[ent] = min(entity_clips.get(ent, clip), clip)
    for ent, node in nodes.items():
        if node.type in ("img", "voice"):
            entity_clips.setdefault(ent, min(by_clip, default=0))
    last = max(by_clip, default=0)
    video_id = graph.add_video(video_name, path=video_path, duration=(last + 1) * clip_seconds,
                               clip_seconds=clip_seconds, meta={"imported_from": "m3-agent"})
    id_map: dict[int, int] = {}
    stats = {"video": video_name, "clips": 0, "faces": 0, "voices": 0, "lines": 0, "skipped_clips": 0}
    for clip in sorted(set(by_clip) | set(entity_clips.values())):
        if graph.has_clip(video_id, clip):
            stats["skipped_clips"] += 1
            for ent, first in entity_clips.items():
                if first == clip:
                    id_map.setdefault(ent, ent)
            continue
        with graph.clip(video_id, clip, clip * clip_seconds, (clip + 1) * clip_seconds) as batch:
            for ent in sorted(e for e, first in entity_clips.items() if first == clip):
                node = nodes[ent]
                embs = [np.asarray(e, np.float32).reshape(-1) for e in (node.embeddings or [])]
                contents = list((node.metadata or {}).get("contents", []) or [])
                if node.type == "img":
                    crops = [(c, None) for c in (_crop_bytes(x) for x in contents) if c]
                    id_map[ent] = batch.face(embs, crops=crops, meta={"m3_id": ent})
                    stats["faces"] += 1
                else:
                    segs = [(clip * clip_seconds, (clip + 1) * clip_seconds, str(t)) for t in contents
                            if isinstance(t, str)]
                    id_map[ent] = batch.voice(embs, segments=segs, meta={"m3_id": ent})
                    stats["voices"] += 1

            def remap(kind: str, number: int) -> str | None:
                return None if kind == "character" or number not in id_map else f"<{kind}_{id_map[number]}>"

            for text_id in by_clip.get(clip, []):
                node = nodes[text_id]
                for text in (node.metadata or {}).get("contents", []) or []:
                    text = rewrite_tags(str(text), remap)
                    if node.type == "episodic":
                        batch.episodic(text)
                    else:
                        batch.semantic(text)
                    stats["lines"] += 1
        stats["clips"] += 1
    return stats
