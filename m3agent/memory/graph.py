"""The memory graph: the one object memorization, search, the CLI and training share.

A facade over its parts, each with one job: :class:`SQLiteStore` (all SQL), :class:`VectorCache`
(text vectors in memory), :class:`Characters` (who is who, and names), :class:`MemoryWriter` (ids,
commits, forgetting) and :func:`search_memory`. It also owns the text embedder: passed in, or built
on first use from what the DB records it was written with. The parts never import this module.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from m3agent.config import DEFAULT_CLIP_SECONDS, MemoryConfig
from m3agent.memory import edits
from m3agent.memory.characters import CharacterMap, Characters, apart_pairs
from m3agent.memory.errors import EmbedderMismatchError, MemoryStoreError, UnknownEntityError
from m3agent.memory.export import export_video, inspect_db
from m3agent.memory.forgetting import forgotten_records
from m3agent.memory.lexical import LexicalIndex
from m3agent.memory.m3_import import M3Graph, import_m3_graph
from m3agent.memory.model import Clip, NodeKind, TextNode, Video
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
                  clip_seconds: float = DEFAULT_CLIP_SECONDS, meta: dict | None = None) -> int:
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

    @contextmanager
    def editing(self) -> Iterator[None]:
        """Hold the writer lock and one store transaction for a block: several writes (a line in, the line it
        replaces retired) land whole or not at all; :meth:`clip` and :meth:`retire_lines` inside join it. When
        the block fails, what its writes left in this process's caches goes with the rolled-back rows."""
        try:
            with self.writer.lock, self.store.transaction():
                yield
        except BaseException:
            self._characters.clear()
            self._lexical.clear()
            self.writer.forget_caches()
            self._vectors.catch_up(ids_removed=True)  # the cached vectors are read again from the store
            raise

    def retire_lines(self, node_ids: Sequence[int], at_clip: int, by: int | None = None) -> None:
        """Supersede lines at ``at_clip`` (replaced by line ``by``, or dropped when None), the one edit a
        memory-building policy makes besides writing (see :mod:`m3agent.memory.edits`)."""
        edits.retire_lines(self.writer, node_ids, at_clip, by)

    def claim_text_source(self, source: str) -> int:
        """The id of text source ``source``, created if new; a video's name is refused (its clips are time).
        Policies and environments build a source's memory one call at a time, so they claim it first."""
        return text_source(self.store, self.writer, source)

    def update_video_meta(self, video_id: int, **values) -> None:
        """Merge ``values`` into a video's (or text source's) metadata, in one transaction: a policy keeps its
        progress and its core block there, beside the lines."""
        self.store.update_video_meta(video_id, **values)

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
        gone = forgotten_records(self.store, self.claim_text_source(source), [r.id for r in records], procedural)
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

    def clip_spans(self, video_id: int, clip_ids: Iterable[int]) -> dict[int, tuple[float, float]]:
        """Clip -> its ``(start, end)`` seconds, for the clips asked that exist: where a player seeks to."""
        return self.store.clip_spans(video_id, clip_ids)

    def last_clip(self, video_id: int) -> int:
        """The highest clip number of a video or text source, -1 before its first: where the next one goes."""
        return self.store.last_clip(video_id)

    def video_meta(self, video_id: int) -> dict:
        """A video's (or text source's) metadata: its kind, and what writers keep beside its lines."""
        return self.store.video_meta(video_id)

    def live_lines(self, video_id: int, node_ids: Sequence[int] | None = None) -> dict[int, TextNode]:
        """Id -> line, for the semantic and episodic lines among ``node_ids`` (None: all) of ``video_id`` that
        today's memory holds (not superseded), in id order: what a policy may still update or delete."""
        return edits.live_lines(self.writer, video_id, node_ids)

    def clip_live_lines(self, video_id: int, clip: int, containing: str | None = None) -> list[TextNode]:
        """One clip's episodic and semantic lines that today's memory holds (``containing``: only lines holding
        that text, any ASCII case), in id order: what a writer continues from the clip before."""
        return [n for n in self.store.text_nodes(video_id, clips=[clip], containing=containing)
                if n.invalidated_at is None]

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
    CORRECTIONS = {"merge": "same", "not-same": "apart", "rename": "name", "split": "split"}

    def correct(self, video: int | str | None, action: str, a: str, b: str | None = None) -> dict:
        """Store a person's correction: ``merge A B`` (one person), ``not-same A B`` (two people: never joined
        again, by an equivalence or a fold), ``rename A NAME``, ``split A CLIPS`` (A's part in those clips,
        ``"3,5-7"``, is another person: it gets a node of its own, kept apart from A). A and B are characters
        (id or name) or nodes (``face_3``, ``voice_9``). Stored in the DB, so it holds across resumes and later
        memorization; undone with :meth:`undo_correction`."""
        if action not in self.CORRECTIONS:
            raise UnknownEntityError(f"unknown correction {action!r}: one of {', '.join(self.CORRECTIONS)}")
        if not b or not str(b).strip():
            raise UnknownEntityError({"rename": "rename needs a name", "split": "split needs the clips (e.g. 3,5-7)"}
                                     .get(action, f"{action} needs two arguments"))
        video_id = self.resolve_video(video).id
        self.refresh()
        if action == "split":
            return self._split(video_id, self._split_target(video_id, str(a)), parse_clips(str(b)), {"by": "person"})
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

    def _split_target(self, video_id: int, text: str) -> int:
        """The node a split means: a node, or a character with a single face or voice node."""
        if text.strip().lstrip("<").lower().startswith(("face_", "voice_")):
            return self._characters.resolve_node(video_id, text)
        cmap = self._characters.of(video_id)
        character = self._characters.resolve(video_id, text)
        nodes = [m for m in cmap.members.get(character, []) if cmap.kinds.get(m) in (NodeKind.FACE, NodeKind.VOICE)]
        if len(nodes) != 1:
            listed = ", ".join(f"{cmap.kinds[m].label}_{m}" for m in nodes) or "none"
            raise UnknownEntityError(f"character_{character} has the nodes {listed}: say which one to split")
        return nodes[0]

    def _split(self, video_id: int, node: int, clips: Sequence[int], why: dict) -> dict:
        label = self.store.node_kinds([node])[node].label
        held = set(self.store.sightings(video_id).get(node, ()))
        absent = sorted(set(clips) - held)
        if absent:
            raise UnknownEntityError(f"{label}_{node} is not in clip {', '.join(map(str, absent))} (its clips: "
                                     f"{', '.join(map(str, sorted(held))) or 'none'})")
        if set(clips) >= held:
            raise UnknownEntityError(f"a split must leave {label}_{node} some of its clips (it is only in "
                                     f"{', '.join(map(str, sorted(held)))})")
        moved = sorted(set(clips))
        note = json.dumps({"clips": moved, **why}, sort_keys=True)
        new, number = self.writer.split_entity(
            node, moved, self.store.merged_entities(video_id), embed=self.can_embed,
            record=lambda new: self.store.add_correction(video_id, "split", node, new, value=note))
        return {"id": number, "action": "split", "a": node, "b": new, "clips": moved, **why}

    def corrections(self, video: int | str | None = None) -> list[dict]:
        """The corrections in force for a video, in the order made (a split with its clips, who made it and why)."""
        fixes = self.store.corrections(self.resolve_video(video).id)
        for fix in fixes:
            if fix["action"] == "split" and fix["value"]:
                fix.update(json.loads(fix.pop("value")))
        return fixes

    def undo_correction(self, video: int | str | None, number: int) -> None:
        """Take a correction back; a split's two nodes become one again (a fold that records the undo)."""
        video_id = self.resolve_video(video).id
        fix = next((f for f in self.store.corrections(video_id) if f["id"] == int(number)), None)
        if fix is None:
            raise UnknownEntityError(f"no correction {number} in force for this video (see m3agent characters DB "
                                     "corrections)")
        with self.editing():
            if fix["action"] == "split" and fix["b"] in self.store.node_kinds([fix["b"]]):
                at = self.store.sightings(video_id).get(fix["b"], [None])[0]
                self.writer.fold_entities([(fix["b"], fix["a"])], at, {fix["b"]: {"undo of correction": fix["id"]}})
            self.store.undo_correction(video_id, int(number))
        self._changed_here()

    def _record_unfold(self, video_id: int, found: dict, new: int) -> int:
        """In the undo's transaction: the split that keeps ``new`` apart from the node it left, and the tags of
        the folded-away node (and of nodes folded into it before, whose clips all moved) naming ``new``."""
        gone, into = found["gone"], found["into"]
        number = self.store.add_correction(video_id, "split", into, new, value=json.dumps(
            {"clips": found["clips"], "by": "memory", "reason": found["reason"], "fold of": gone}, sort_keys=True))
        aliases = self.store.merged_entities(video_id)
        for fold in self.store.folds(video_id):
            record = dict(fold["evidence"] or {})
            clips = set(record.get("clips", [[None]])[0])
            if aliases.get(fold["gone"]) != into or not (fold["gone"] == gone or clips <= set(found["clips"])):
                continue
            if fold["gone"] == gone:
                record["undone"] = {"correction": number, "reason": found["reason"], "node": new}
            self.store.repoint_fold(fold["gone"], new, record)
        return number

    def kept_apart(self, video_id: int) -> frozenset[frozenset[int]]:
        """Node pairs that are two people by a correction (a person's not-same, a split): never folded."""
        return frozenset(frozenset(pair) for pair in apart_pairs(self.store.corrections(video_id)))

    def undo_contradicted_folds(self, video_id: int) -> list[dict]:
        """Undo every fold that evidence written after it contradicts (see
        :func:`m3agent.memory.identity_check.contradicted_fold`): the clips that were the folded-away node's (and
        later ones that fit them) go to a node of their own, kept apart from the rest, and the old node's tags
        name it. Returns what was undone; the memorizer calls it after each clip."""
        from m3agent.memory.identity_check import contradicted_fold

        undone = []
        self.refresh()
        for _ in range(len(self.store.folds(video_id))):
            found = contradicted_fold(self.store, video_id)
            if found is None:
                break
            gone, into = found["gone"], found["into"]
            new, number = self.writer.split_entity(
                into, found["clips"], self.store.merged_entities(video_id), embed=self.can_embed,
                record=lambda new, found=found: self._record_unfold(video_id, found, new))
            log.warning("the fold of node %d into %d is undone: %s; clips %s are node %d now (correction %d)",
                        gone, into, found["reason"], found["clips"], new, number)
            undone.append({**found, "node": new, "correction": number})
        return undone

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

    @property
    def lesson_threshold(self) -> float:
        """The score at which a lesson is about the question asked: ``memory.search.lesson_threshold``, else the
        embedder's."""
        if self.config.search.lesson_threshold is not None:
            return self.config.search.lesson_threshold
        embedder = self.embedder_required()
        return embedder.relevance_threshold if embedder.lesson_threshold is None else embedder.lesson_threshold

    def lessons(self, video_id: int, query: str, k: int, before_clip: int | None = None, *,
                gated: bool = False) -> list[str]:
        """Up to ``k`` procedural lines of a video (feedback learned before ``before_clip``) for ``query``, best
        first; ``gated``: only those about ``query`` (:attr:`lesson_threshold`), not merely the nearest. Nothing is
        embedded when the video has none."""
        if k <= 0:
            return []
        self.refresh()
        held = self.vectors.videos.get(video_id)
        if held is None or int(NodeKind.PROCEDURAL) not in held.kinds_present:
            return []
        wanted = max(4 * k, 12) if gated else k  # fused ranking may put a lesson that only shares words first
        found = self.search(query, video=video_id, lines=wanted, before_clip=before_clip,
                            kinds=[NodeKind.PROCEDURAL]).lines
        if gated:
            least = self.lesson_threshold
            found = [line for line in found if line["score"] >= least]
        return [line["text"] for line in found[:k]]

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


def parse_clips(spec: str, limit: int = 100_000) -> list[int]:
    """``"3,5-7"`` -> ``[3, 5, 6, 7]``: the clips a person names (at most ``limit`` of them)."""
    clips: set[int] = set()
    for part in (p.strip() for p in spec.split(",")):
        first, dash, last = part.partition("-")
        if not first.strip().isdigit() or (dash and not last.strip().isdigit()) or len(part) > 24:
            raise UnknownEntityError(f"not a clip or a clip range: {part!r} (e.g. 3,5-7)")
        low, high = int(first), int(last) if dash else int(first)
        if high < low or len(clips) + high - low >= limit:
            raise UnknownEntityError(f"not a clip range: {part!r}")
        clips.update(range(low, high + 1))
    return sorted(clips)
