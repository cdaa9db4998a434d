"""JSON views of a memory DB: ``export`` (one video, every node) and ``inspect`` (a summary)."""

from __future__ import annotations

import os
from pathlib import Path

from m3agent.memory.characters import Characters
from m3agent.memory.model import TAG_OF_KIND, TEXT_KINDS, NodeKind, Video
from m3agent.memory.store import SCHEMA_VERSION, SQLiteStore


def export_video(store: SQLiteStore, characters: Characters, video: Video) -> dict:
    sightings = store.sightings(video.id)
    segments = store.voice_segments(video.id)
    nodes: list[dict] = []
    for node_id, _, kind, weight in store.entity_rows(video.id):
        entry = {"id": node_id, "kind": kind.label, "tag": f"<{TAG_OF_KIND[kind]}_{node_id}>",
                 "clips": sightings.get(node_id, []), "text": None, "entities": [], "weight": weight}
        if kind is NodeKind.VOICE:
            entry["segments"] = [
                {"clip": s.clip, "start": s.start, "end": s.end, "text": s.text} for s in segments.get(node_id, [])
            ]
        nodes.append(entry)
    for name, node_id in store.speakers(video.id).items():
        nodes.append({"id": node_id, "kind": NodeKind.SPEAKER.label, "name": name, "clips": sightings.get(node_id, []),
                      "text": None, "entities": []})
    text_nodes = store.text_nodes(video.id, kinds=TEXT_KINDS)
    meta = store.node_meta(n.id for n in text_nodes)
    for node in text_nodes:
        entry = {"id": node.id, "kind": node.kind.label, "clip": node.clip, "text": node.text,
                 "entities": node.entities, "weight": node.weight,
                 "valid_from": node.clip if node.valid_from is None else node.valid_from,
                 "invalidated_by": node.invalidated_by, "invalidated_at": node.invalidated_at}
        if node.id in meta:
            entry["record"] = meta[node.id]
        nodes.append(entry)
    nodes.sort(key=lambda n: n["id"])
    cmap = characters.of(video.id)
    names = characters.known_names(video.id)
    return {
        "schema": SCHEMA_VERSION,
        "video": {"name": video.name, "path": video.path, "duration": video.duration,
                  "clip_seconds": video.clip_seconds, "kind": store.video_meta(video.id).get("kind", "video")},
        "clips": [{"id": c.id, "start": c.start, "end": c.end} for c in store.clips(video.id)],
        "nodes": nodes,
        "characters": cmap.as_tags(),
        "names": {f"character_{c}": name for c, name in sorted(names.items())},
    }


def inspect_db(store: SQLiteStore, characters: Characters, files: list[Path]) -> dict:
    """A summary of the DB; ``files`` are the DB's files on disk (main file, WAL, caches) for its size."""
    meta = store.meta()
    size = sum(os.path.getsize(p) for p in files)
    videos = []
    for video in store.videos():
        clips = store.clips(video.id)
        cmap = characters.of(video.id)
        videos.append({"id": video.id, "name": video.name, "path": video.path, "duration": video.duration,
                       "clip_seconds": video.clip_seconds, "clips": len(clips),
                       "last_clip": clips[-1].id if clips else None,
                       "characters": len(cmap.members), "names": len(characters.known_names(video.id))})
    return {"path": str(store.path), "schema": int(meta.get("schema", SCHEMA_VERSION)),
            "embedder": meta.get("embedder"), "dim": int(meta["dim"]) if "dim" in meta else None,
            "bytes": size, **store.counts(), "videos": videos}
