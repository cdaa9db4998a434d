"""The memory graph: the one object memorization, search, the CLI and training share.

A facade over its parts, each with one job: :class:`SQLiteStore` (all SQL), :class:`VectorCache`
(text vectors in memory), :class:`Characters` (who is who, and names), :class:`MemoryWriter` (ids,
commits, forgetting) and :func:`search_memory`. It also owns the text embedder: passed in, or built
on first use from what the DB records it was written with. The parts never import this module.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from m3agent.config import MemoryConfig
from m3agent.memory.characters import CharacterMap, Characters
from m3agent.memory.errors import EmbedderMismatchError, MemoryStoreError, UnknownEntityError
from m3agent.memory.export import export_video, inspect_db
from m3agent.memory.forgetting import forgotten_records
from m3agent.memory.lexical import LexicalIndex
from m3agent.memory.m3_import import M3Graph, import_m3_graph
from m3agent.memory.model import Clip, NodeKind, Video
from m3agent.memory.search import SearchContext, SearchResult, SeenClips, search_memory
from m3agent.memory.store import SQLiteStore
from m3agent.memory.text_sources import (
    RememberReport,
    TextRecord,
    remember_lesson,
    remember_records,
    text_source,
)
from m3agent.memory.vectors import TextVectors, VectorCache
from m3agent.memory.views import CharacterCard, TimelineClip, character_cards, timeline
from m3agent.memory.writer import ClipBatch, MemoryWriter
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
        meta = store.meta()
        if embedder is not None and meta.get("embedder") not in (None, embedder.name):
            raise EmbedderMismatchError(
                f"{store.path} was written with embedder {meta['embedder']!r}, not {embedder.name!r}"
            )
        dim = int(meta["dim"]) if "dim" in meta else (embedder.dim if embedder else 0)
        self._vectors = VectorCache(store, self.config.index, str(store.path) + ".ivf", dim, str(store.path) + ".vec")
        self._characters = Characters(store)
        self._lexical = LexicalIndex(store, self.config.search.lexical_postings)
        self.writer = MemoryWriter(store, self.config, self._vectors, self.embed_queries, self._changed_here)
        if not store.readonly:
            self._finish_interrupted_forget()
        self._data_version = store.data_version()

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, path: str | os.PathLike[str], config: MemoryConfig | None = None, *,
             embedder: TextEmbedder | None = None, embedder_factory: EmbedderFactory | None = None,
             create: bool = True, readonly: bool = False) -> MemoryGraph:
        return cls(SQLiteStore(path, create=create, readonly=readonly), config, embedder, embedder_factory)

    def _finish_interrupted_forget(self) -> None:
        try:
            self.writer.finish_scrub()
        except MemoryStoreError as exc:  # still busy or full: the next writer tries again
            log.warning("%s: an earlier forget is not yet scrubbed from disk: %s", self.store.path, exc)

    def close(self) -> None:
        """Save the index cache and close the DB (and its writer lock); closing twice is harmless."""
        if self.store.closed:
            return
        self._vectors.save()
        self.store.close()

    def __enter__(self) -> MemoryGraph:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ embedder
    @property
    def can_embed(self) -> bool:
        return self._embedder is not None or self._embedder_factory is not None

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
        self._vectors.dim = embedder.dim

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embedder_required().embed(list(texts))

    # ------------------------------------------------------------------ staying current
    @property
    def vectors(self) -> TextVectors:
        return self._vectors.get()

    def refresh(self) -> None:
        """Pick up what another process committed since this graph last looked."""
        version = self.store.data_version()
        if version == self._data_version:
            return
        ids_removed = version[1] != self._data_version[1]
        self._data_version = version
        self._characters.clear()
        self._lexical.clear()
        self.writer.forget_caches()
        meta = self.store.meta()
        if "dim" in meta:
            self._vectors.dim = int(meta["dim"])
        self._vectors.catch_up(ids_removed)

    def _changed_here(self) -> None:
        """This process committed: its caches are already repaired; only derived views go."""
        self._characters.clear()
        self._lexical.clear()
        self._data_version = self.store.data_version()

    # ------------------------------------------------------------------ writing
    def add_video(self, name: str, path: str | None = None, duration: float | None = None,
                  clip_seconds: float = 30.0, meta: dict | None = None) -> int:
        return self.writer.add_video(name, path, duration, clip_seconds, meta)

    def claim_video(self, name: str, fingerprint: str, **kwargs) -> int:
        """The video a memorization writes to, identified by content (see :meth:`MemoryWriter.claim_video`)."""
        return self.writer.claim_video(name, fingerprint, **kwargs)

    def clip(self, video_id: int, clip: int, start: float, end: float, append: bool = False):
        """Context manager collecting one clip's records; commits them in one transaction on exit
        (``append``: added to a clip already stored)."""
        return self.writer.clip(video_id, clip, start, end, append)

    def has_clip(self, video_id: int, clip: int) -> bool:
        return self.writer.has_clip(video_id, clip)

    def fold_entities(self, pairs: Sequence[tuple[int, int]], at_clip: int,
                      evidence: Mapping[int, dict] | None = None) -> dict[int, np.ndarray]:
        """Fold ``(gone, into)`` face or voice node pairs found to be one person (see
        :meth:`MemoryWriter.fold_entities`); tags of ``gone`` keep resolving to ``into``'s character, and
        ``evidence[gone]`` (what the fold was decided on) is kept for ``characters --explain``."""
        return self.writer.fold_entities(pairs, at_clip, evidence)

    def sightings(self, video_id: int) -> dict[int, list[int]]:
        """Face or voice node -> the clips it was seen or heard in."""
        return self.store.sightings(video_id)

    def stated_names(self, video_id: int, nodes: Sequence[int]) -> dict[int, set[str]]:
        """The names each of these face or voice nodes gave itself (its own name lines)."""
        return self._characters.stated_names(video_id, nodes)

    def remember(self, source: str, records: Iterable[TextRecord], *, procedural: bool = False,
                 progress: Callable[[int], None] | None = None) -> RememberReport:
        """Store text records as lines of a text source (see :mod:`m3agent.memory.text_sources`); records whose
        ids were forgotten (:meth:`forget`) are not stored again, only counted in the report's ``forgotten``."""
        kind = NodeKind.PROCEDURAL if procedural else NodeKind.EPISODIC
        records = list(records)
        gone = forgotten_records(self.store, text_source(self.store, self.writer, source), [r.id for r in records],
                                 procedural)
        report = remember_records(self.store, self.writer, self.embed_queries, source,
                                  [r for r in records if r.id not in gone], kind=kind, progress=progress)
        report.forgotten = sum(r.id in gone for r in records)
        return report

    def remember_lesson(self, video_id: int, clip: int, text: str, meta: dict | None = None) -> int:
        """A procedural line (feedback, a correction) on a video, learned at ``clip``."""
        return remember_lesson(self.writer, self.embed_queries, video_id, clip, text, meta)

    def import_m3(self, source: M3Graph, video_name: str, **kwargs) -> dict:
        """Copy a loaded M3-Agent graph into this memory (see :mod:`m3agent.memory.m3_import`)."""
        return import_m3_graph(source, self, video_name, **kwargs)

    # ------------------------------------------------------------------ reading
    def videos(self) -> list[Video]:
        return self.store.videos()

    def resolve_video(self, video: int | str | None) -> Video:
        """A video by id or name; with None, the only video in the DB."""
        return self.store.resolve_video(video)

    def clips(self, video_id: int) -> list[Clip]:
        return self.store.clips(video_id)

    def entity_snapshots(self, kind: NodeKind, video_id: int) -> dict[int, np.ndarray]:
        """The embeddings each face (or voice) node of a video keeps, for identity matching."""
        return self.store.all_entity_embeddings(kind, video_id)

    def characters(self, video_id: int, before_clip: int | None = None) -> CharacterMap:
        return self._characters.of(video_id, before_clip)

    def names(self, video_id: int, before_clip: int | None = None) -> dict[int, str]:
        """Character number -> the name the memory's semantic lines give it."""
        return self._characters.names(video_id, before_clip)

    def resolve_character(self, video: int | str | None, text: str) -> int:
        """The character number a user means: ``character_3``, ``3``, or a name it is known by."""
        return self._characters.resolve(self.resolve_video(video).id, str(text))

    # ------------------------------------------------------------------ a person's corrections of who is who
    CORRECTIONS = {"merge": "same", "not-same": "apart", "rename": "name"}

    def correct(self, video: int | str | None, action: str, a: str, b: str | None = None) -> dict:
        """Store a person's correction: ``merge A B`` (one person), ``not-same A B`` (two people: never joined
        again, by an equivalence or a fold), ``rename A NAME``. A and B are characters (id or name) or nodes
        (``face_3``, ``voice_9``). Stored in the DB, so it holds across resumes and later memorization; undone
        with :meth:`undo_correction`."""
        if action not in self.CORRECTIONS:
            raise UnknownEntityError(f"unknown correction {action!r}: one of {', '.join(self.CORRECTIONS)}")
        if not b or not str(b).strip():
            raise UnknownEntityError(f"{action} needs two arguments" if action != "rename" else "rename needs a name")
        video_id = self.resolve_video(video).id
        self.refresh()
        first = self._characters.resolve_node(video_id, str(a))
        if action == "rename":
            name = " ".join(str(b).split())
            number = self.store.add_correction(video_id, "name", first, value=name)
            fix = {"id": number, "action": action, "a": first, "value": name}
        else:
            second = self._characters.resolve_node(video_id, str(b))
            if first == second:
                raise UnknownEntityError(f"{a} and {b} are one node: nothing to {action}")
            number = self.store.add_correction(video_id, self.CORRECTIONS[action], first, second)
            fix = {"id": number, "action": action, "a": first, "b": second}
        self._changed_here()
        return fix

    def corrections(self, video: int | str | None = None) -> list[dict]:
        """The corrections in force for a video, in the order made."""
        return self.store.corrections(self.resolve_video(video).id)

    def undo_correction(self, video: int | str | None, number: int) -> None:
        if not self.store.undo_correction(self.resolve_video(video).id, int(number)):
            raise UnknownEntityError(f"no correction {number} in force for this video (see m3agent characters DB "
                                     "corrections)")
        self._changed_here()

    # ------------------------------------------------------------------ search
    def search(self, query: str, *, retrieval: str | None = None, **kwargs) -> SearchResult:
        """Memory search; see :func:`m3agent.memory.search.search_memory`. ``retrieval`` overrides the
        configured ranking ("fused", "dense", "lexical") for this search."""
        self.refresh()
        embedder = self.embedder_required()
        settings = self.config.search
        if retrieval is not None and retrieval != settings.retrieval:
            settings = dataclasses.replace(settings, retrieval=retrieval)
        ctx = SearchContext(self.store, self.vectors, self._characters, embedder.embed, settings,
                            embedder.relevance_threshold, self._lexical)
        return search_memory(ctx, query, **kwargs)

    def lessons(self, video_id: int, query: str, k: int, before_clip: int | None = None) -> list[str]:
        """Up to ``k`` procedural lines of a video (feedback learned before ``before_clip``) for ``query``;
        nothing is embedded when the video has none."""
        if k <= 0:
            return []
        self.refresh()
        held = self.vectors.videos.get(video_id)
        if held is None or int(NodeKind.PROCEDURAL) not in held.kinds_present:
            return []
        found = self.search(query, video=video_id, lines=k, before_clip=before_clip, kinds=[NodeKind.PROCEDURAL])
        return [line["text"] for line in found.lines]

    # ------------------------------------------------------------------ forgetting
    def forget(self, video_id: int, character: int | str, *, keep_mentions: bool = False,
               wait: float = 30.0) -> dict:
        """Remove a character completely (by id or by a name it is known by): its face/voice nodes with
        their crops, embeddings and transcripts (or a text source's speaker with the records they spoke),
        the lines only about it, its tags in lines it shares, and unless ``keep_mentions`` the lines and
        transcripts where others name it. Returns only once no file beside the DB holds any of it (see
        :meth:`MemoryWriter.forget`)."""
        number = self.resolve_character(video_id, character)
        cmap = self.characters(video_id)
        members = set(cmap.members[number])
        members |= {gone for gone, into in cmap.aliases.items() if into in members}  # their tags go too
        names = self._characters.names_ever(video_id, number)
        plan = self.writer.forget(video_id, members, self.embed_queries if self.can_embed else None, names=names,
                                  keep_mentions=keep_mentions, wait=wait)
        return {"character": f"character_{number}", "removed_entities": sorted(members),
                "removed_lines": plan.removed_lines, "removed_mentions": plan.mentions,
                "rewritten_lines": [n for n, _ in plan.rewritten], "removed_transcripts": len(plan.segments),
                "removed_records": len(plan.records), "names_removed": 0 if keep_mentions else len(names),
                "checked_for_leftovers": len(plan.needles)}

    # ------------------------------------------------------------------ views
    def export(self, video: int | str | None = None) -> dict:
        return export_video(self.store, self._characters, self.resolve_video(video))

    def character_cards(self, video: int | str | None = None) -> list[CharacterCard]:
        """One card per character: face crops, a voice sample, its name, the clips it is in."""
        self.refresh()
        return character_cards(self.store, self._characters, self.resolve_video(video))

    def identity_problems(self, video: int | str | None = None) -> list[dict]:
        """Characters whose identity looks wrong (two names, a voice seen as two faces): see
        :mod:`m3agent.memory.identity_check`."""
        from m3agent.memory.identity_check import identity_problems

        self.refresh()
        return identity_problems(self.store, self._characters, self.resolve_video(video))

    def folds(self, video: int | str | None = None) -> list[dict]:
        """The video's folds (two nodes found to be one person), each with the evidence it was decided on."""
        self.refresh()
        return self.store.folds(self.resolve_video(video).id)

    def timeline(self, video: int | str | None = None, character: int | None = None) -> list[TimelineClip]:
        """The clips in order with their lines (superseded ones marked), optionally of one character."""
        self.refresh()
        return timeline(self.store, self._characters, self.resolve_video(video), character=character)

    def inspect(self) -> dict:
        return inspect_db(self.store, self._characters, self.db_files())

    def integrity_check(self) -> list[str]:
        """SQLite's own check, then the vectors' (dimension, finiteness), which SQLite cannot judge."""
        return self.store.integrity_check() + self.store.vector_problems()

    def db_files(self) -> list[Path]:
        base = self.store.path
        files = (base, Path(f"{base}-wal"), Path(self._vectors.sidecar), Path(self._vectors.vector_file))
        return [p for p in files if p.exists()]


__all__ = ["ClipBatch", "MemoryGraph", "SeenClips"]
