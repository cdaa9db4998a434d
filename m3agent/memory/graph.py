"""The memory graph: the one object memorization, search, the CLI and training share.

``MemoryGraph`` owns a :class:`SQLiteStore` (rows), a :class:`TextVectors` cache (search) and an
optional text embedder (passed in, or built from what the DB records it was written with).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np

from m3agent.config import MemoryConfig
from m3agent.memory.characters import CharacterMap, Equivalence, build_characters, character_names
from m3agent.memory.errors import EmbedderMismatchError, MemoryStoreError, UnknownEntityError
from m3agent.memory.model import NodeKind, Video
from m3agent.memory.store import SQLiteStore
from m3agent.memory.tags import is_equivalence, parse_tags, rewrite_tags
from m3agent.memory.vectors import TextVectors
from m3agent.memory.writer import ClipBatch
from m3agent.models.embed.base import TextEmbedder

log = logging.getLogger(__name__)

EmbedderFactory = Callable[[dict[str, str]], TextEmbedder]


class MemoryGraph:
    def __init__(self, store: SQLiteStore, config: MemoryConfig | None = None,
                 embedder: TextEmbedder | None = None, embedder_factory: EmbedderFactory | None = None):
        self.store = store
        self.config = config or MemoryConfig()
        self._embedder = embedder
        self._embedder_factory = embedder_factory
        self._write_lock = threading.RLock()
        self._id_floor = 0
        self._characters: dict[tuple[int, int | None], CharacterMap] = {}
        self._semantic: dict[int, dict[frozenset[int], list[tuple[int, str]]]] = {}
        meta = store.meta()
        if embedder is not None and meta.get("embedder") not in (None, embedder.name):
            raise EmbedderMismatchError(
                f"{store.path} was written with embedder {meta['embedder']!r}, not {embedder.name!r}"
            )
        self.dim = int(meta["dim"]) if "dim" in meta else (embedder.dim if embedder else 0)
        self._vectors: TextVectors | None = None
        self._data_version = self._db_version()

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, path: str | os.PathLike[str], config: MemoryConfig | None = None, *,
             embedder: TextEmbedder | None = None, embedder_factory: EmbedderFactory | None = None,
             create: bool = True, readonly: bool = False) -> MemoryGraph:
        return cls(SQLiteStore(path, create=create, readonly=readonly), config, embedder, embedder_factory)

    def close(self) -> None:
        if self._vectors is not None and not self.store.readonly:
            try:
                self._vectors.save()
            except OSError as exc:  # the sidecar is a cache; failing to save it loses nothing
                log.warning("could not save vector index: %s", exc)
        self.store.close()

    def __enter__(self) -> MemoryGraph:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def sidecar_path(self) -> str:
        return str(self.store.path) + ".ivf"

    def _identity(self) -> str:
        meta = self.store.meta()
        return f"{meta.get('uuid')}:{meta.get('index_epoch', '0')}"

    def _db_version(self) -> tuple[int, str]:
        """Changes whenever another connection commits (``PRAGMA data_version``) or forgets."""
        version = self.store.conn.execute("PRAGMA data_version").fetchone()[0]
        return int(version), self.store.meta().get("index_epoch", "0")

    # ------------------------------------------------------------------ embedder
    def embedder_required(self) -> TextEmbedder:
        if self._embedder is None:
            if self._embedder_factory is None:
                raise MemoryStoreError("this operation needs a text embedder; none was given")
            self._embedder = self._embedder_factory(self.store.meta())
        meta = self.store.meta()
        if "embedder" in meta and meta["embedder"] != self._embedder.name:
            raise EmbedderMismatchError(
                f"{self.store.path} holds {meta['embedder']!r} vectors; embedder is {self._embedder.name!r}"
            )
        if "embedder" not in meta and not self.store.readonly:
            self._record_embedder(self._embedder)
        return self._embedder

    def _record_embedder(self, embedder: TextEmbedder) -> None:
        backend = "hashing" if embedder.name.startswith("hashing-") else "sentence-transformers"
        for key, value in (("embedder", embedder.name), ("embedder_backend", backend), ("dim", str(embedder.dim))):
            self.store.set_meta(key, value)
        self.dim = embedder.dim

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.embedder_required().embed(texts)

    # ------------------------------------------------------------------ vectors
    @property
    def vectors(self) -> TextVectors:
        if self._vectors is None:
            self._vectors = TextVectors.from_store(self.store, self.dim or 1, self.config.index,
                                                   self.sidecar_path, self._identity())
        return self._vectors

    def refresh(self) -> None:
        """Pick up what another process committed since this graph last looked."""
        version = self._db_version()
        if version == self._data_version:
            return
        epoch_changed = version[1] != self._data_version[1]
        self._data_version = version
        self._characters.clear()
        self._semantic.clear()
        if "dim" in self.store.meta():
            self.dim = int(self.store.meta()["dim"])
        if self._vectors is None:
            return
        if epoch_changed:
            self._vectors = None
            return
        known = max(self._vectors.video_of, default=-1)
        fresh = [r for r in self.store.text_vector_rows() if r[0] > known]
        for video_id in {r[1] for r in fresh}:
            rows = [r for r in fresh if r[1] == video_id]
            ids, _, kinds, clips, valid, _, blobs = zip(*rows)
            vecs = np.frombuffer(b"".join(blobs), np.float32).reshape(len(rows), self.dim)
            self._vectors.add(video_id, ids, clips, kinds, valid, vecs)
        for node_id, dead_clip in self.store.conn.execute(
            "SELECT id, invalidated_at FROM nodes WHERE invalidated_at IS NOT NULL"
        ):
            self._vectors.invalidate(int(node_id), int(dead_clip))

    # ------------------------------------------------------------------ writing
    def add_video(self, name: str, path: str | None = None, duration: float | None = None,
                  clip_seconds: float = 30.0, meta: dict | None = None) -> int:
        return self.store.upsert_video(name, path, duration, clip_seconds, meta)

    def clip(self, video_id: int, clip: int, start: float, end: float) -> _ClipContext:
        """Context manager collecting one clip's records; commits them in one transaction on exit."""
        return _ClipContext(ClipBatch(self, video_id, clip, start, end))

    def has_clip(self, video_id: int, clip: int) -> bool:
        return self.store.has_clip(video_id, clip)

    def _reserve_ids(self) -> int:
        with self._write_lock:
            return max(self.store.next_node_id(), self._id_floor)

    def _release_ids(self, next_id: int) -> None:
        self._id_floor = max(self._id_floor, next_id)

    def _weight(self, node_id: int) -> float:
        row = self.store.conn.execute("SELECT weight FROM nodes WHERE id = ?", (node_id,)).fetchone()
        return float(row[0]) if row else 0.0

    def _semantic_peers(self, video_id: int, entities: frozenset[int]) -> list[tuple[int, str]]:
        if video_id not in self._semantic:
            table: dict[frozenset[int], list[tuple[int, str]]] = {}
            for node in self.store.text_nodes(video_id, kind=NodeKind.SEMANTIC):
                if node.invalidated_by is None:
                    table.setdefault(frozenset(node.entities), []).append((node.id, node.text))
            self._semantic[video_id] = table
        return list(self._semantic[video_id].get(entities, []))

    def _after_commit(self, video_id: int, clip: int, lines, invalidations: dict[int, int]) -> None:
        if self.dim == 0 and lines:
            self.dim = len(lines[0].vector)
        if lines and "dim" not in self.store.meta():
            self.store.set_meta("dim", str(self.dim))
        vectors = self._vectors  # None: loaded lazily from the DB, which now holds these lines
        if vectors is None:
            self._characters.clear()
            self._semantic.pop(video_id, None)
            self._data_version = self._db_version()
            return
        if lines:
            vectors.add(video_id, [ln.node_id for ln in lines], [clip] * len(lines),
                        [int(ln.kind) for ln in lines],
                        [clip if ln.valid_from is None else ln.valid_from for ln in lines],
                        np.stack([ln.vector for ln in lines]))
        for node_id in invalidations:
            vectors.invalidate(node_id, clip)
        table = self._semantic.get(video_id)
        if table is not None:
            known = {e[0] for e in self.store.entity_rows(video_id)}
            for ln in lines:
                if ln.kind is NodeKind.SEMANTIC:
                    ents = frozenset(e for _, e in parse_tags(ln.text) if e in known)
                    table.setdefault(ents, []).append((ln.node_id, ln.text))
            for ents, peers in table.items():
                table[ents] = [p for p in peers if p[0] not in invalidations]
        self._characters.clear()
        self._data_version = self._db_version()

    # ------------------------------------------------------------------ reading
    def videos(self) -> list[Video]:
        return self.store.videos()

    def resolve_video(self, video: int | str | None) -> Video:
        """A video by id or name; with None, the only video in the DB."""
        videos = self.videos()
        if video is None:
            if len(videos) == 1:
                return videos[0]
            if not videos:
                raise MemoryStoreError(f"{self.store.path} holds no video yet")
            names = ", ".join(v.name for v in videos)
            raise MemoryStoreError(f"{self.store.path} holds {len(videos)} videos ({names}): name one")
        for v in videos:
            if v.name == str(video) or str(v.id) == str(video):
                return v
        raise MemoryStoreError(f"no video {video!r} in {self.store.path}")

    def characters(self, video_id: int, before_clip: int | None = None) -> CharacterMap:
        key = (video_id, before_clip)
        if key not in self._characters:
            entities = {
                node_id: kind
                for node_id, kind, first_clip in self.store.entity_first_clips(video_id)
                if before_clip is None or first_clip <= before_clip
            }
            eq_nodes = [
                n for n in self.store.text_nodes(video_id, kind=NodeKind.SEMANTIC)
                if is_equivalence(n.text) and _visible(n, before_clip)
            ]
            weights = self.store.edges_of_text([n.id for n in eq_nodes])
            equivalences = [Equivalence(n.id, tuple(n.entities), weights.get(n.id, {})) for n in eq_nodes]
            self._characters[key] = build_characters(entities, equivalences)
        return self._characters[key]

    def characters_all(self, before_clip: int | None = None) -> CharacterMap:
        merged = CharacterMap()
        for video in self.videos():
            cmap = self.characters(video.id, before_clip)
            merged.members.update(cmap.members)
            merged.kinds.update(cmap.kinds)
            merged._of.update(cmap._of)
        return merged

    def names(self, video_id: int, before_clip: int | None = None) -> dict[int, str]:
        """Character number -> the name the memory's semantic lines give it."""
        cmap = self.characters(video_id, before_clip)
        lines = [
            (n.text, n.weight) for n in self.store.text_nodes(video_id, kind=NodeKind.SEMANTIC)
            if _visible(n, before_clip)
        ]
        return character_names(cmap, lines)

    # ------------------------------------------------------------------ search
    def search(self, query: str, **kwargs):
        """M3-Agent memory search; see :func:`m3agent.memory.search.search_memory`."""
        from m3agent.memory.search import search_memory

        self.refresh()
        return search_memory(self, query, **kwargs)

    # ------------------------------------------------------------------ forgetting
    def forget(self, video_id: int, character: int | str) -> dict:
        """Remove a character completely: its face/voice nodes with their crops and embeddings, the
        lines that mention only it, and its tags in the lines it shares. The file is vacuumed."""
        number = int(str(character).strip("<>").removeprefix("character_"))
        cmap = self.characters(video_id)
        members = set(cmap.members.get(number, []))
        if not members:
            raise UnknownEntityError(f"no <character_{number}> in video {video_id}")
        linked = self.store.texts_linked_to(members)
        edges = self.store.edges_of_text(linked)
        only_it = [t for t in linked if set(edges.get(t, {})) <= members]
        shared = [t for t in linked if t not in set(only_it)]
        member_tags = {f"{kind}_{n}" for n in members for kind in ("face", "voice")}
        rewritten = []
        for node in self.store.text_nodes(ids=shared):
            text = rewrite_tags(node.text, {t: "someone" for t in member_tags})
            rewritten.append((node.id, text))
        new_vectors = None
        if rewritten and (self._embedder is not None or self._embedder_factory is not None):
            new_vectors = self.embedder_required().embed([t for _, t in rewritten])
        with self._write_lock:
            self.store.conn.execute("PRAGMA secure_delete = ON")
            with self.store.transaction() as conn:
                self.store.delete_nodes(sorted(members) + only_it)
                for i, (node_id, text) in enumerate(rewritten):
                    self.store.update_text(node_id, text, None if new_vectors is None else new_vectors[i])
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('index_epoch', '1') ON CONFLICT (key)"
                    " DO UPDATE SET value = CAST(value AS INTEGER) + 1"
                )
            self.store.vacuum()
            if self._vectors is not None:
                self._vectors.drop_ann()
                self._vectors = None
            elif os.path.exists(self.sidecar_path):
                os.remove(self.sidecar_path)
            self._characters.clear()
            self._semantic.clear()
            self._data_version = self._db_version()
        return {"character": f"character_{number}", "removed_entities": sorted(members),
                "removed_lines": sorted(only_it), "rewritten_lines": [n for n, _ in rewritten]}

    # ------------------------------------------------------------------ export
    def export(self, video: int | str | None = None) -> dict:
        from m3agent.memory.export import export_video

        return export_video(self, self.resolve_video(video))

    def db_files(self) -> list[Path]:
        base = self.store.path
        return [p for p in (base, Path(f"{base}-wal"), Path(self.sidecar_path)) if p.exists()]


def _visible(node, before_clip: int | None) -> bool:
    if before_clip is None:
        return node.invalidated_by is None
    start = node.clip if node.valid_from is None else node.valid_from
    if node.clip > before_clip or start > before_clip:
        return False
    return node.invalidated_at is None or node.invalidated_at > before_clip


class _ClipContext:
    def __init__(self, batch: ClipBatch):
        self.batch = batch

    def __enter__(self) -> ClipBatch:
        return self.batch

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            self.batch.commit()
        return False
