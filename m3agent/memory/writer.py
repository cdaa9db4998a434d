"""Writing one clip: collect its records, embed the text once, commit everything in one transaction.

A clip either lands whole or not at all, so an interrupted memorization resumes at the first clip
that is not in the DB. Repeated semantic facts reinforce the existing node instead of duplicating
it; contradicting ones weaken it, and once its support is gone it is superseded (still visible to
as-of queries before the superseding clip).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from m3agent.config import DEFAULT_CLIP_SECONDS, MemoryConfig
from m3agent.memory.characters import name_statement
from m3agent.memory.errors import MemoryStoreError
from m3agent.memory.forgetting import (
    SCRUB_PENDING,
    ForgetIncompleteError,
    ForgetPlan,
    note_forgotten,
    plan_forget,
    scrub,
    verify_gone,
    wait_for_checkpoint,
)
from m3agent.memory.model import NodeKind, Video, VoiceSegment
from m3agent.memory.store import SQLiteStore, vec_to_blob
from m3agent.memory.tags import entity_ids, parse_tags, rewrite_tags, tag
from m3agent.memory.vectors import VectorCache

log = logging.getLogger(__name__)
Embed = Callable[[Sequence[str]], np.ndarray]


class VideoMismatchError(MemoryStoreError, ValueError):
    """The name asked for belongs to a stored video with other content."""


class ClipAlreadyStoredError(MemoryStoreError, ValueError):
    pass


class ConcurrentWriterError(MemoryStoreError, RuntimeError):
    """Another process wrote node ids this batch had reserved: use one writer per DB."""


@dataclass
class _Entity:
    node_id: int
    kind: NodeKind
    new: bool
    embeddings: list[tuple[np.ndarray, float | None]] = field(default_factory=list)
    crops: list[tuple[bytes, float | None]] = field(default_factory=list)
    segments: list[VoiceSegment] = field(default_factory=list)
    meta: dict | None = None


@dataclass
class _Line:
    node_id: int
    kind: NodeKind
    text: str
    vector: np.ndarray | None
    valid_from: int | None
    contradicts: tuple[int, ...] = ()
    supersedes: tuple[int, ...] = ()
    meta: dict | None = None  # a text record's id, time, speaker, session
    links: tuple[int, ...] = ()  # entities the line is about beyond its tags (a record's speaker)


@dataclass
class ClipReport:
    """What a committed clip changed; memorizers log it."""

    video_id: int
    clip: int
    inserted: list[int] = field(default_factory=list)
    reinforced: dict[int, int] = field(default_factory=dict)  # line id of this clip -> existing node
    weakened: list[int] = field(default_factory=list)
    superseded: list[int] = field(default_factory=list)
    new_entities: list[int] = field(default_factory=list)
    #: face/voice node -> the embeddings it keeps after this clip (the snapshot policy's choice), for
    #: identity matching of the next clips: the same set a resumed run reads back from the store
    snapshots: dict[int, np.ndarray] = field(default_factory=dict)


class ClipBatch:
    """Records of one clip. Use as ``with graph.clip(video_id, clip, start, end) as batch: ...``."""

    def __init__(self, writer: MemoryWriter, video_id: int, clip: int, start: float, end: float,
                 append: bool = False):
        self.writer, self.video_id, self.clip, self.start, self.end = writer, video_id, clip, start, end
        self.append = append  # lines added to a clip already stored (a text session, a lesson learned)
        self._base = writer.reserve_ids()
        self._next = self._base
        self._entities: dict[int, _Entity] = {}
        self._lines: list[_Line] = []
        self.report = ClipReport(video_id, clip)

    def _new_id(self) -> int:
        node_id = self._next
        self._next += 1
        return node_id

    # ------------------------------------------------------------------ entities
    def face(self, embeddings: Sequence[np.ndarray], node_id: int | None = None, *,
             crops: Sequence[tuple[bytes, float | None]] = (), qualities: Sequence[float] | None = None,
             meta: dict | None = None) -> int:
        """Record a face seen in this clip: a new node, or more evidence for ``node_id``."""
        return self._entity(NodeKind.FACE, embeddings, node_id, qualities, meta, crops=crops)

    def voice(self, embeddings: Sequence[np.ndarray], node_id: int | None = None, *,
              segments: Sequence[tuple[float, float, str]] = (), meta: dict | None = None) -> int:
        """Record a voice heard in this clip with its transcript segments (seconds in the video)."""
        segs = [VoiceSegment(self.clip, float(s), float(e), str(t)) for s, e, t in segments]
        return self._entity(NodeKind.VOICE, embeddings, node_id, None, meta, segments=segs)

    def speaker(self, name: str, node_id: int | None = None) -> int:
        """A named speaker of text records: a new node, or ``node_id`` (stored) seen again."""
        return self._entity(NodeKind.SPEAKER, [], node_id, None, {"name": str(name)} if node_id is None else None)

    def _entity(self, kind, embeddings, node_id, qualities, meta, crops=(), segments=()) -> int:
        if node_id is None:
            entity = _Entity(self._new_id(), kind, True, meta=meta)
            self._entities[entity.node_id] = entity
        else:
            entity = self._entities.get(node_id)
            if entity is None:
                known = self.writer.store.node_kinds([node_id]).get(node_id)
                if known is not kind:
                    raise ValueError(f"node {node_id} is not an existing {kind.label} node")
                entity = self._entities[node_id] = _Entity(node_id, kind, False, meta=meta)
        quals = list(qualities) if qualities is not None else [None] * len(embeddings)
        entity.embeddings.extend((np.asarray(v, np.float32), q) for v, q in zip(embeddings, quals))
        entity.crops.extend(crops)
        entity.segments.extend(segments)
        return entity.node_id

    # ------------------------------------------------------------------ text
    def episodic(self, text: str, *, vector: np.ndarray | None = None, valid_from: int | None = None,
                 meta: dict | None = None, links: Sequence[int] = ()) -> int:
        return self._line(NodeKind.EPISODIC, text, vector, valid_from, (), (), meta, links)

    def procedural(self, text: str, *, vector: np.ndarray | None = None, meta: dict | None = None,
                   links: Sequence[int] = ()) -> int:
        """A procedural line: how to act (what worked, what a user corrected), not what happened."""
        return self._line(NodeKind.PROCEDURAL, text, vector, None, (), (), meta, links)

    def semantic(self, text: str, *, vector: np.ndarray | None = None, valid_from: int | None = None,
                 contradicts: Sequence[int] = (), supersedes: Sequence[int] = ()) -> int:
        """A semantic line. ``contradicts`` weakens those nodes; ``supersedes`` invalidates them now."""
        return self._line(NodeKind.SEMANTIC, text, vector, valid_from, tuple(contradicts), tuple(supersedes))

    def _line(self, kind, text, vector, valid_from, contradicts, supersedes, meta=None, links=()) -> int:
        text = " ".join(str(text).split())
        if not text:
            raise ValueError("empty memory line")
        unknown = [e for e in links if e not in self._entities]
        if unknown:
            raise ValueError(f"lines link to entities of their own clip (speaker() first): {unknown}")
        line = _Line(self._new_id(), kind, text, vector, valid_from, contradicts, supersedes, meta, tuple(links))
        self._lines.append(line)
        return line.node_id

    # ------------------------------------------------------------------ commit
    def commit(self) -> ClipReport:
        return self.writer.commit(self)

    def _write_entities(self) -> set[int]:
        store, cfg = self.writer.store, self.writer.config
        for entity in self._entities.values():
            if entity.new:
                store.insert_entity_node(entity.node_id, self.video_id, entity.kind, self.clip, entity.meta)
                self.report.new_entities.append(entity.node_id)
            if store.add_sighting(entity.node_id, self.clip):
                store.bump_weight(entity.node_id, 1)
            cap = cfg.face_snapshots if entity.kind is NodeKind.FACE else cfg.voice_snapshots
            if entity.embeddings:
                old = [(c, q, v) for _, c, q, v in store.entity_embeddings(entity.node_id)]
                new = [(self.clip, q, v) for v, q in entity.embeddings]
                kept = keep_best(old + new, cap)
                store.replace_entity_embeddings(entity.node_id, kept)
                self.report.snapshots[entity.node_id] = np.stack([v for _, _, v in kept])
            if entity.crops:
                old_crops = store.crops(entity.node_id)
                new_crops = [(self.clip, q, bytes(j)) for j, q in entity.crops]
                store.replace_crops(entity.node_id, keep_best(old_crops + new_crops, cfg.crops_per_face))
            if entity.segments:
                store.add_voice_segments(entity.node_id, entity.segments)
        # every face/voice node a line may link to: this clip's plus the video's stored ones
        return set(self._entities) | {row[0] for row in store.entity_rows(self.video_id)}

    @dataclass
    class _Plan:
        inserted_lines: list[_Line] = field(default_factory=list)
        reinforce: dict[int, int] = field(default_factory=dict)  # existing node -> count
        weaken: dict[int, int] = field(default_factory=dict)
        invalidations: dict[int, int] = field(default_factory=dict)  # node -> superseding node

    def _plan_semantics(self, known_entities: set[int]) -> ClipBatch._Plan:
        writer = self.writer
        plan = ClipBatch._Plan()
        batch_semantic: list[_Line] = []
        for line in self._lines:
            if line.kind is not NodeKind.SEMANTIC:
                plan.inserted_lines.append(line)
                continue
            ents = frozenset(e for e in entity_ids(line.text) if e in known_entities)
            existing = writer.semantic_peers(self.video_id, ents)
            earlier = [ln for ln in batch_semantic if _line_entities(ln, known_entities) == ents]
            contradicted = set(line.contradicts) | {
                peer_id for peer_id, peer_text in existing if _names_conflict(line.text, peer_text)
            }
            for target in contradicted:
                plan.weaken[target] = plan.weaken.get(target, 0) + 1
                self.report.weakened.append(target)
            match = _best_match(line.vector, [pid for pid, _ in existing if pid not in contradicted],
                                writer.vectors, earlier, writer.config.reinforce_cosine)
            reinforcing = match is not None and not line.supersedes
            winner = match if reinforcing else line.node_id
            for target in contradicted:
                if writer.store.weight(target) - plan.weaken[target] <= 0:
                    plan.invalidations[target] = winner
            if reinforcing:
                plan.reinforce[match] = plan.reinforce.get(match, 0) + 1
                self.report.reinforced[line.node_id] = match
                continue
            for target in line.supersedes:
                plan.invalidations[target] = line.node_id
            plan.inserted_lines.append(line)
            batch_semantic.append(line)
        return plan

    def _write_lines(self, plan: ClipBatch._Plan, known_entities: set[int]) -> None:
        store = self.writer.store
        rows, edges = [], []
        for line in plan.inserted_lines:
            valid_from = self.clip if line.valid_from is None else line.valid_from
            rows.append((line.node_id, self.video_id, int(line.kind), self.clip, line.text, 1.0, valid_from,
                         vec_to_blob(line.vector), line.meta))
            linked = {e for e in entity_ids(line.text) if e in known_entities} | set(line.links)
            edges.extend((line.node_id, e, 1.0) for e in sorted(linked))
            self.report.inserted.append(line.node_id)
        store.insert_text_nodes(rows)
        records = [(self.video_id, str(ln.meta["record"]), ln.node_id, ln.kind is NodeKind.PROCEDURAL)
                   for ln in plan.inserted_lines if ln.meta and "record" in ln.meta]
        if records:
            store.insert_records(records)
        store.add_edges(edges)
        for node_id, count in plan.reinforce.items():
            store.bump_edges(node_id, count)
            store.bump_weight(node_id, count)
        for node_id, count in plan.weaken.items():
            store.bump_edges(node_id, -count)
            store.bump_weight(node_id, -count)
        for node_id, by in plan.invalidations.items():
            store.set_invalidated(node_id, by, self.clip)
            self.report.superseded.append(node_id)


class MemoryWriter:
    """Everything about writing one DB: node-id reservation under one lock, the per-video cache of
    semantic peers (for reinforcement and contradiction), the commit of a clip and the repair of the
    in-memory caches afterwards, and forgetting. ``on_change`` tells the owner its own caches are stale."""

    def __init__(self, store: SQLiteStore, config: MemoryConfig, vectors: VectorCache, embed: Embed,
                 on_change: Callable[[], None] = lambda: None):
        self.store, self.config, self.vectors, self.embed = store, config, vectors, embed
        self.on_change = on_change
        self.lock = threading.RLock()
        self._id_floor = 0
        self._semantic: dict[int, dict[frozenset[int], list[tuple[int, str]]]] = {}

    def add_video(self, name: str, path: str | None = None, duration: float | None = None,
                  clip_seconds: float = DEFAULT_CLIP_SECONDS, meta: dict | None = None) -> int:
        return self.store.upsert_video(name, path, duration, clip_seconds, meta)

    def claim_video(self, name: str, fingerprint: str, *, name_given: bool, path: str | None = None,
                    duration: float | None = None, clip_seconds: float = DEFAULT_CLIP_SECONDS, meta: dict | None = None) -> int:
        """The video a memorization writes to, identified by content: the stored video with this
        fingerprint (resumed, even if the file was renamed or moved), else a new one. A name taken by
        other content is refused when the user chose it, and otherwise gets a free variant
        (``episode.mp4 (2)``): a different video is never resumed into another's memory."""
        store = self.store
        with self.lock, store.transaction():
            videos = store.videos()
            fingerprints = {v.id: store.video_meta(v.id).get("fingerprint") for v in videos}
            by_name = {v.name: v for v in videos}
            taken = by_name.get(name)
            same = taken if taken and _same_video(taken, fingerprints[taken.id], fingerprint, path, duration) else None
            if same is None and not name_given:
                same = next((v for v in videos if fingerprints[v.id] == fingerprint), None)
            if same is None and taken is not None:
                if name_given:
                    raise VideoMismatchError(
                        f"{store.path} already holds a different video named {name!r} (from {taken.path}); "
                        f"{path} has other content: give it another --name")
                name = _free_name(name, by_name)
                log.warning("%s already holds another video named %r (from %s); this one is stored as %r",
                            store.path, taken.name, taken.path, name)
            if same is not None:
                name = same.name
            video_id = store.upsert_video(name, path, duration, clip_seconds, meta)
            if fingerprints.get(video_id) != fingerprint:
                store.update_video_meta(video_id, fingerprint=fingerprint)
            return video_id

    def clip(self, video_id: int, clip: int, start: float, end: float, append: bool = False) -> _ClipContext:
        """Context manager collecting one clip's records; commits them in one transaction on exit. With
        ``append`` the clip may already be stored and the records are added to it."""
        return _ClipContext(ClipBatch(self, video_id, clip, start, end, append))

    def has_clip(self, video_id: int, clip: int) -> bool:
        return self.store.has_clip(video_id, clip)

    def forget_caches(self) -> None:
        """Another connection changed the DB: cached semantic peers may be stale."""
        self._semantic.clear()

    # ------------------------------------------------------------------ ids
    def reserve_ids(self) -> int:
        """The first node id a new batch may use (ids of batches not yet committed are skipped)."""
        with self.lock:
            return max(self.store.next_node_id(), self._id_floor)

    def _release_ids(self, next_id: int) -> None:
        self._id_floor = max(self._id_floor, next_id)

    # ------------------------------------------------------------------ semantic peers
    def semantic_peers(self, video_id: int, entities: frozenset[int]) -> list[tuple[int, str]]:
        """Valid semantic lines of a video about exactly these entities: ``(node id, text)``."""
        if video_id not in self._semantic:
            table: dict[frozenset[int], list[tuple[int, str]]] = {}
            for node in self.store.text_nodes(video_id, kind=NodeKind.SEMANTIC):
                if node.invalidated_by is None:
                    table.setdefault(frozenset(node.entities), []).append((node.id, node.text))
            self._semantic[video_id] = table
        return list(self._semantic[video_id].get(entities, []))

    # ------------------------------------------------------------------ commit
    def commit(self, batch: ClipBatch) -> ClipReport:
        """Embed the batch's lines, then write everything in one transaction and repair the caches."""
        lines = batch._lines
        missing = [ln for ln in lines if ln.vector is None]
        if missing:
            for line, vector in zip(missing, self.embed([ln.text for ln in missing])):
                line.vector = vector
        for line in lines:
            line.vector = np.asarray(line.vector, np.float32).reshape(-1)
            if self.vectors.dim == 0:  # the first vectors of a DB written without an embedder set its size
                self.vectors.dim = line.vector.shape[0]
            if line.vector.shape[0] != self.vectors.dim:
                raise ValueError(f"vector of {line.text!r} has {line.vector.shape[0]} dims, "
                                 f"DB uses {self.vectors.dim}")
        store = self.store
        with self.lock:
            stored = store.has_clip(batch.video_id, batch.clip)
            if stored and not batch.append:
                raise ClipAlreadyStoredError(f"clip {batch.clip} of video {batch.video_id} is already stored")
            with store.transaction():
                if store.next_node_id() > batch._base:
                    raise ConcurrentWriterError(f"{store.path} was written by another process; use one writer per DB")
                known_entities = batch._write_entities()
                plan = batch._plan_semantics(known_entities)
                batch._write_lines(plan, known_entities)
                if not stored:
                    store.insert_clip(batch.video_id, batch.clip, batch.start, batch.end)
            self._after_commit(batch.video_id, batch.clip, plan.inserted_lines, plan.invalidations)
        self._release_ids(batch._next)
        return batch.report

    def _after_commit(self, video_id: int, clip: int, lines: list[_Line], invalidations: dict[int, int]) -> None:
        """Bring the caches in step with what was just committed, without reading it back."""
        if lines and "dim" not in self.store.meta():
            self.store.set_meta("dim", str(self.vectors.dim))
        vectors = self.vectors.loaded  # None: loaded lazily from the DB, which now holds these lines
        if vectors is None:
            self._semantic.pop(video_id, None)
        else:
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
        self.on_change()

    # ------------------------------------------------------------------ identities
    def fold_entities(self, pairs: Sequence[tuple[int, int]], at_clip: int,
                      evidence: Mapping[int, dict] | None = None) -> dict[int, np.ndarray]:
        """Fold each ``(gone, into)`` entity pair (one person found twice) in one transaction: ``into``
        keeps the best of both nodes' embeddings and crops (the snapshot policy), the rest moves or goes as
        :meth:`SQLiteStore.fold_entity` says; ``evidence[gone]`` is kept with its fold. Returns the snapshots
        each kept node now matches against."""
        store, cfg = self.store, self.config
        kept_snapshots = {}
        with self.lock:
            with store.transaction():
                kinds = store.node_kinds([n for pair in pairs for n in pair])
                for gone, into in pairs:
                    if gone not in kinds or into not in kinds or kinds[gone] is not kinds[into]:
                        raise ValueError(f"cannot fold node {gone} into node {into}: not two stored entities of one kind")
                    cap = cfg.face_snapshots if kinds[into] is NodeKind.FACE else cfg.voice_snapshots
                    rows = [(c, q, v) for _, c, q, v in store.entity_embeddings(into) + store.entity_embeddings(gone)]
                    kept = keep_best(sorted(rows, key=lambda r: -1 if r[0] is None else r[0]), cap)
                    store.replace_entity_embeddings(into, kept)
                    store.replace_crops(into, keep_best(store.crops(into) + store.crops(gone), cfg.crops_per_face))
                    store.fold_entity(gone, into, at_clip, (evidence or {}).get(gone))
                    kept_snapshots.pop(gone, None)
                    kept_snapshots[into] = np.stack([v for _, _, v in kept]) if kept else np.zeros((0, 0), np.float32)
            self._semantic.clear()
            self.on_change()
        return kept_snapshots

    def split_entity(self, node: int, clips: Sequence[int], aliases: Mapping[int, int], *, embed: bool,
                     record: Callable[[int], int]) -> tuple[int, int]:
        """Give entity ``node``'s part in ``clips`` a node of its own (one node found to hold two people) and
        return it: what :meth:`SQLiteStore.split_entity` moves, and in those clips' lines every tag naming
        ``node`` (or a node folded into it: ``aliases``) now names the new one, re-embedded with ``embed`` (a
        tag's number barely moves a line's vector: a memory without an embedder keeps the old one).
        ``record(new)`` writes in the same transaction what keeps the two apart; returns ``(new, its result)``."""
        store = self.store
        with self.lock:
            kind = store.node_kinds([node])[node]
            video_id = store.node_video(node)
            label = kind.label
            new = self.reserve_ids()

            def retag(tag_kind: str, number: int) -> str | None:
                return tag(tag_kind, new) if tag_kind == label and aliases.get(number, number) == node else None

            rewritten = []
            for line in store.text_nodes(video_id, clips=sorted(set(clips)), containing="<"):
                text = rewrite_tags(line.text, retag)
                if text != line.text:
                    rewritten.append((line.id, text))
            vectors = self.embed([text for _, text in rewritten]) if rewritten and embed else None
            with store.transaction():
                store.split_entity(node, clips, new)
                recorded = record(new)
                for i, (line_id, text) in enumerate(rewritten):
                    store.update_text(line_id, text, None if vectors is None else vectors[i])
                store.bump_index_epoch()  # vectors and supersessions changed in place: readers start again
            self._release_ids(new + 1)
            self.vectors.reset()
            self._semantic.clear()
            self.on_change()
        return new, recorded

    # ------------------------------------------------------------------ forgetting
    def forget(self, video_id: int, members: set[int], embed: Embed | None, *, names: Sequence[str] = (),
               keep_mentions: bool = False, wait: float = 30.0) -> ForgetPlan:
        """Delete entity nodes ``members`` with everything only about them, their tags in the lines
        they share (re-embedded when ``embed`` is given) and, unless ``keep_mentions``, the lines and
        transcripts where others say one of their ``names``; then scrub the files and check, byte by
        byte, that none of it is left (see :mod:`m3agent.memory.forgetting`)."""
        store = self.store
        # readers holding old snapshots would keep the data in the WAL: find out before changing anything
        wait_for_checkpoint(store, wait, "nothing was changed")
        plan = plan_forget(store, video_id, members, names, keep_mentions)
        new_vectors = embed([t for _, t in plan.rewritten]) if plan.rewritten and embed is not None else None
        with self.lock:
            with store.transaction():
                store.delete_nodes(sorted(members) + plan.removed_lines)
                store.delete_voice_segments(plan.segments)
                note_forgotten(store, video_id, plan.records)  # giving these records again will not bring them back
                for i, (node_id, text) in enumerate(plan.rewritten):
                    store.update_text(node_id, text, None if new_vectors is None else new_vectors[i])
                store.rebuild_lexical()  # no term of a removed line may survive in the index's pages
                store.bump_index_epoch()
                store.set_meta(SCRUB_PENDING, "1")
            self.vectors.reset()
            self._semantic.clear()
            self.on_change()
            self.finish_scrub(wait)
        leftovers = verify_gone(store, plan.needles)
        if leftovers:
            raise ForgetIncompleteError(
                f"the memory no longer holds them, but files beside {store.path} still contain some of the removed "
                f"data: {', '.join(leftovers)} (copies or backups of the DB?); delete them, or they keep what was "
                "forgotten")
        return plan

    def finish_scrub(self, wait: float = 0.0) -> None:
        """Complete a scrub an earlier forget could not finish (a reader held old pages, or a crash)."""
        if SCRUB_PENDING not in self.store.meta():
            return
        with self.lock:
            scrub(self.store, wait)
            self.store.delete_meta(SCRUB_PENDING)
            self.store.checkpoint()


def _same_video(stored: Video, stored_fingerprint: str | None, fingerprint: str, path: str | None,
                duration: float | None) -> bool:
    """Whether a stored video is this one. Videos stored before fingerprints were kept count as the
    same only when their path and duration agree."""
    if stored_fingerprint is not None:
        return stored_fingerprint == fingerprint
    same_duration = stored.duration is not None and duration is not None and abs(stored.duration - duration) < 0.5
    return stored.path is not None and stored.path == path and same_duration


def _free_name(name: str, taken: Mapping[str, object]) -> str:
    k = 2
    while f"{name} ({k})" in taken:
        k += 1
    return f"{name} ({k})"


def keep_best(rows: list[tuple], cap: int) -> list[tuple]:
    """Keep ``cap`` of ``(clip, quality, payload)`` rows: best quality first; without qualities an
    even spread over time, so identities stay matchable across a long video."""
    if len(rows) <= cap:
        return rows
    if any(r[1] is not None for r in rows):
        order = sorted(range(len(rows)), key=lambda i: (-(rows[i][1] or 0.0), -i))[:cap]
        return [rows[i] for i in sorted(order)]
    picks = np.unique(np.linspace(0, len(rows) - 1, cap).round().astype(int))
    return [rows[i] for i in picks]


def _line_entities(line: _Line, known: set[int]) -> frozenset[int]:
    return frozenset(e for e in entity_ids(line.text) if e in known)


def _names_conflict(new_text: str, old_text: str) -> bool:
    new, old = name_statement(new_text), name_statement(old_text)
    return bool(new and old and new[:2] == old[:2] and new[2].lower() != old[2].lower())


def _best_match(vector, peer_ids, vectors: VectorCache, earlier: list[_Line], threshold: float) -> int | None:
    best, best_score = None, threshold
    if peer_ids:  # only now are the stored vectors needed (and loaded, if nobody searched yet)
        scores = vectors.get().vectors_of(np.asarray(peer_ids)) @ vector
        i = int(np.argmax(scores))
        if scores[i] > best_score:
            best, best_score = peer_ids[i], float(scores[i])
    for line in earlier:
        score = float(line.vector @ vector)
        if score > best_score:
            best, best_score = line.node_id, score
    return best


class _ClipContext:
    def __init__(self, batch: ClipBatch):
        self.batch = batch

    def __enter__(self) -> ClipBatch:
        return self.batch

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            self.batch.commit()
        return False
