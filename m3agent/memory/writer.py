"""Writing one clip: collect its records, embed the text once, commit everything in one transaction.

A clip either lands whole or not at all, so an interrupted memorization resumes at the first clip
that is not in the DB. Repeated semantic facts reinforce the existing node instead of duplicating
it; contradicting ones weaken it, and once its support is gone it is superseded (still visible to
as-of queries before the superseding clip).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from m3agent.memory.characters import name_statement
from m3agent.memory.errors import MemoryStoreError
from m3agent.memory.model import NodeKind, VoiceSegment
from m3agent.memory.store import vec_to_blob
from m3agent.memory.tags import entity_ids

if TYPE_CHECKING:
    from m3agent.memory.graph import MemoryGraph


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


class ClipBatch:
    """Records of one clip. Use as ``with graph.clip(video_id, clip, start, end) as batch: ...``."""

    def __init__(self, graph: MemoryGraph, video_id: int, clip: int, start: float, end: float):
        self.graph, self.video_id, self.clip, self.start, self.end = graph, video_id, clip, start, end
        self._base = graph._reserve_ids()
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

    def _entity(self, kind, embeddings, node_id, qualities, meta, crops=(), segments=()) -> int:
        if node_id is None:
            entity = _Entity(self._new_id(), kind, True, meta=meta)
            self._entities[entity.node_id] = entity
        else:
            entity = self._entities.get(node_id)
            if entity is None:
                known = self.graph.store.node_kinds([node_id]).get(node_id)
                if known is not kind:
                    raise ValueError(f"node {node_id} is not an existing {kind.label} node")
                entity = self._entities[node_id] = _Entity(node_id, kind, False, meta=meta)
        quals = list(qualities) if qualities is not None else [None] * len(embeddings)
        entity.embeddings.extend((np.asarray(v, np.float32), q) for v, q in zip(embeddings, quals))
        entity.crops.extend(crops)
        entity.segments.extend(segments)
        return entity.node_id

    # ------------------------------------------------------------------ text
    def episodic(self, text: str, *, vector: np.ndarray | None = None, valid_from: int | None = None) -> int:
        return self._line(NodeKind.EPISODIC, text, vector, valid_from, (), ())

    def semantic(self, text: str, *, vector: np.ndarray | None = None, valid_from: int | None = None,
                 contradicts: Sequence[int] = (), supersedes: Sequence[int] = ()) -> int:
        """A semantic line. ``contradicts`` weakens those nodes; ``supersedes`` invalidates them now."""
        return self._line(NodeKind.SEMANTIC, text, vector, valid_from, tuple(contradicts), tuple(supersedes))

    def _line(self, kind, text, vector, valid_from, contradicts, supersedes) -> int:
        text = " ".join(str(text).split())
        if not text:
            raise ValueError("empty memory line")
        line = _Line(self._new_id(), kind, text, vector, valid_from, contradicts, supersedes)
        self._lines.append(line)
        return line.node_id

    # ------------------------------------------------------------------ commit
    def commit(self) -> ClipReport:
        graph = self.graph
        missing = [ln for ln in self._lines if ln.vector is None]
        if missing:
            vectors = graph.embedder_required().embed([ln.text for ln in missing])
            for line, vector in zip(missing, vectors):
                line.vector = vector
        for line in self._lines:
            line.vector = np.asarray(line.vector, np.float32).reshape(-1)
            if graph.dim == 0:  # the first vectors of a DB written without an embedder set its size
                graph.dim = line.vector.shape[0]
            if line.vector.shape[0] != graph.dim:
                raise ValueError(f"vector of {line.text!r} has {line.vector.shape[0]} dims, DB uses {graph.dim}")
        with graph._write_lock:
            if graph.store.has_clip(self.video_id, self.clip):
                raise ClipAlreadyStoredError(f"clip {self.clip} of video {self.video_id} is already stored")
            with graph.store.transaction():
                if graph.store.next_node_id() > self._base:
                    raise ConcurrentWriterError(
                        f"{graph.store.path} was written by another process; use one writer per DB"
                    )
                known_entities = self._write_entities()
                plan = self._plan_semantics(known_entities)
                self._write_lines(plan, known_entities)
                graph.store.insert_clip(self.video_id, self.clip, self.start, self.end)
            graph._after_commit(self.video_id, self.clip, plan.inserted_lines, plan.invalidations)
        graph._release_ids(self._next)
        return self.report

    def _write_entities(self) -> set[int]:
        store, cfg = self.graph.store, self.graph.config
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
                store.replace_entity_embeddings(entity.node_id, keep_best(old + new, cap))
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
        graph = self.graph
        plan = ClipBatch._Plan()
        batch_semantic: list[_Line] = []
        for line in self._lines:
            if line.kind is not NodeKind.SEMANTIC:
                plan.inserted_lines.append(line)
                continue
            ents = frozenset(e for e in entity_ids(line.text) if e in known_entities)
            existing = graph._semantic_peers(self.video_id, ents)
            earlier = [ln for ln in batch_semantic if _line_entities(ln, known_entities) == ents]
            contradicted = set(line.contradicts) | {
                peer_id for peer_id, peer_text in existing if _names_conflict(line.text, peer_text)
            }
            for target in contradicted:
                plan.weaken[target] = plan.weaken.get(target, 0) + 1
                self.report.weakened.append(target)
            match = _best_match(line.vector, [pid for pid, _ in existing if pid not in contradicted],
                                graph, earlier, graph.config.reinforce_cosine)
            reinforcing = match is not None and not line.supersedes
            winner = match if reinforcing else line.node_id
            for target in contradicted:
                if graph._weight(target) - plan.weaken[target] <= 0:
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
        store = self.graph.store
        rows, edges = [], []
        for line in plan.inserted_lines:
            valid_from = self.clip if line.valid_from is None else line.valid_from
            rows.append((line.node_id, self.video_id, int(line.kind), self.clip, line.text, 1.0, valid_from,
                         vec_to_blob(line.vector)))
            edges.extend((line.node_id, e, 1.0) for e in entity_ids(line.text) if e in known_entities)
            self.report.inserted.append(line.node_id)
        store.insert_text_nodes(rows)
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


def _best_match(vector, peer_ids, graph, earlier: list[_Line], threshold: float) -> int | None:
    best, best_score = None, threshold
    if peer_ids:
        scores = graph.vectors.vectors_of(np.asarray(peer_ids)) @ vector
        i = int(np.argmax(scores))
        if scores[i] > best_score:
            best, best_score = peer_ids[i], float(scores[i])
    for line in earlier:
        score = float(line.vector @ vector)
        if score > best_score:
            best, best_score = line.node_id, score
    return best
