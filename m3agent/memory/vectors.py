"""In-memory text vectors of one DB: exact per-video matrices plus an optional global ANN index.

Search is scoped to a video by default, and a video's lines sit in one contiguous matrix, so the
common case is one exact matrix-vector product. Once the lines in scope exceed
``IndexConfig.ann_threshold``, an IVF index over all videos proposes candidates that are then
filtered (scope, ``before_clip``, validity) and re-scored exactly. The vectors come from the file beside
the DB (:mod:`m3agent.memory.vecfile`, memory-mapped) when it matches the DB, else from SQLite rows.
"""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass

import numpy as np

from m3agent.config import IndexConfig
from m3agent.files.private import touch_private
from m3agent.memory import vecfile
from m3agent.memory.index.flat import FlatIndex
from m3agent.memory.model import DECLARATIVE_KINDS
from m3agent.memory.sorted_ids import SortedIds
from m3agent.memory.store import SQLiteStore
from m3agent.memory.visibility import NEVER, visible

log = logging.getLogger(__name__)
SCATTERED_ROWS = 256  # up to this many rows of the vector file are read, not taken through its mapping
#: After a short list is ordered by 8-bit codes (off by about 1e-3 of cosine), the best ``EXACT_LINES`` lines
#: wanted, whose order and scores a search shows, are scored exactly, with ``EXACT_MARGIN`` more that the
#: codes' rounding may have put just below them; lines further down keep their coded score.
EXACT_LINES = 16
EXACT_MARGIN = 16


def _kind_table(kinds) -> np.ndarray:
    """Which node kinds (as uint8) a search takes: one lookup filters a whole candidate array."""
    table = np.zeros(256, bool)
    table[np.asarray([int(k) for k in kinds], np.int64) & 255] = True
    return table


@dataclass
class LineHits:
    """Candidate lines, best first. ``complete`` is True when no eligible line was left out."""

    ids: np.ndarray
    video_ids: np.ndarray
    clips: np.ndarray
    scores: np.ndarray
    complete: bool


class NodeRows:
    """Where each line's vector is, by node id: ``(video id, row in that video's matrix)``. Lines loaded
    together sit in sorted arrays (a dict of a million ids takes a second to build); later ones in a dict."""

    def __init__(self):
        self._ids = np.zeros(0, np.int64)
        self._video = np.zeros(0, np.int64)
        self._row = np.zeros(0, np.int64)
        self._more: dict[int, tuple[int, int]] = {}
        self._at: np.ndarray | None = None
        self._sorted = SortedIds(self._ids)

    def load(self, ids: np.ndarray, videos: np.ndarray, rows: np.ndarray, at: np.ndarray | None = None) -> None:
        """``at``: each line's row in the vector file they were mapped from (see :meth:`file_rows`)."""
        if len(ids) > 1 and not (ids[1:] > ids[:-1]).all():  # a file written video by video is mostly sorted
            order = np.argsort(ids, kind="stable")
            ids, videos, rows = ids[order], videos[order], rows[order]
            at = None if at is None else at[order]
        self._ids, self._video, self._row, self._at = ids, videos, rows, at
        self._sorted = SortedIds(ids)

    def file_rows(self, node_ids: np.ndarray) -> np.ndarray:
        """Each id's row in the vector file its line was loaded from, -1 for lines that came otherwise."""
        if self._at is None or not len(self._ids):
            return np.full(len(node_ids), -1, np.int64)
        pos, found = self._sorted.find(node_ids)
        return np.where(found, self._at[pos], -1)

    def add(self, node_id: int, video_id: int, row: int) -> None:
        self._more[node_id] = (video_id, row)

    def get(self, node_id: int) -> tuple[int, int] | None:
        hit = self._more.get(node_id)
        if hit is not None:
            return hit
        i = int(np.searchsorted(self._ids, node_id))
        if i < len(self._ids) and self._ids[i] == node_id:
            return int(self._video[i]), int(self._row[i])
        return None

    def get_many(self, node_ids) -> list[tuple[int, int] | None]:
        """:meth:`get` for each id, with one array search for all (search candidates come by the dozen)."""
        ids = np.asarray(node_ids, np.int64).reshape(-1)
        if not len(self._ids):
            return [self._more.get(i) for i in ids.tolist()]
        pos, found = self._sorted.find(ids)
        found = found.tolist()
        pairs = zip(self._video[pos].tolist(), self._row[pos].tolist())
        return [pair if hit else self._more.get(node_id) for node_id, hit, pair in zip(ids.tolist(), found, pairs)]

    def __contains__(self, node_id: int) -> bool:
        return self.get(node_id) is not None

    def __len__(self) -> int:
        return len(self._ids) + len(self._more)

    def ids(self) -> np.ndarray:
        """Every node id held, ascending."""
        return np.union1d(self._ids, np.fromiter(self._more, np.int64, len(self._more)))

    def ids_above(self, node_id: int) -> np.ndarray:
        """The node ids held that are greater than ``node_id``, ascending."""
        later = self._ids[np.searchsorted(self._ids, node_id, side="right"):]
        more = np.fromiter((i for i in self._more if i > node_id), np.int64)
        return np.union1d(later, more) if len(more) else later

    def max_id(self) -> int:
        return max(int(self._ids[-1]) if len(self._ids) else -1, max(self._more, default=-1))


class VideoVectors:
    """One video's text vectors and the per-row facts that search filters on."""

    def __init__(self, dim: int):
        self.index = FlatIndex(dim)
        self.clip = np.zeros(0, np.int32)
        self.kind = np.zeros(0, np.int8)
        self.valid_from = np.zeros(0, np.int32)
        self.dead_at = np.zeros(0, np.int32)  # clip of the invalidating node, NEVER if still valid
        self.kinds_present: set[int] = set()
        self._span: tuple[int, int, int] | None = None  # (lowest id, highest id, rows when computed)

    def __len__(self) -> int:
        return len(self.index)

    def add(self, ids, clips, kinds, valid_from, dead_at, vectors) -> None:
        if len(self.index) == 0:  # the first block is kept as given: a mapped file stays mapped
            self.index.adopt(ids, vectors)
        else:
            self.index.add(ids, vectors)
        self.clip = np.concatenate([self.clip, np.asarray(clips, np.int32)])
        self.kind = np.concatenate([self.kind, np.asarray(kinds, np.int8)])
        self.valid_from = np.concatenate([self.valid_from, np.asarray(valid_from, np.int32)])
        self.dead_at = np.concatenate([self.dead_at, np.asarray(dead_at, np.int32)])
        self.kinds_present.update(np.flatnonzero(np.bincount(self.kind[len(self.kind) - len(ids):].astype(np.uint8))).tolist())

    def visible(self, before_clip: int | None, kinds=DECLARATIVE_KINDS) -> np.ndarray:
        """Rows of these kinds a reader sees (the as-of rule of :mod:`m3agent.memory.visibility`)."""
        mask = visible(self.clip, self.valid_from, self.dead_at, before_clip)
        if self.kinds_present <= {int(k) for k in kinds}:
            return mask
        return mask & _kind_table(kinds)[self.kind.astype(np.uint8)]

    def id_range(self) -> tuple[int, int]:
        if self._span is None or self._span[2] != len(self.index):
            ids = self.index.ids
            self._span = (int(ids.min()), int(ids.max()), len(self.index))
        return self._span[0], self._span[1]


class TextVectors:
    def __init__(self, dim: int, config: IndexConfig, sidecar: str | None = None, identity: str = ""):
        self.dim = dim
        self.config = config
        self.sidecar = sidecar
        self.identity = identity  # DB uuid + index epoch: a sidecar from elsewhere is never used
        self.videos: dict[int, VideoVectors] = {}
        self.where = NodeRows()
        self.ann = None
        self._ann_dirty = False
        self.filed = 0  # lines the vector file holds (rewritten when far behind: see :meth:`save_file`)
        self._file_vectors = np.zeros((0, dim), np.float32)  # the mapped file's vectors, in its row order
        self._file_rows: vecfile.RowReader | None = None  # the same, read row by row (see :meth:`vectors_of`)
        self._flat: dict[str, np.ndarray] | None = None  # every line's filter facts by id (see :meth:`_facts`)
        self._flat_ids = SortedIds(np.zeros(0, np.int64))  # where an id is in ``_flat``
        self._size: int | None = None  # lines held (None: to be counted again after a change)

    # ------------------------------------------------------------------ loading and updates
    @classmethod
    def from_store(cls, store: SQLiteStore, dim: int, config: IndexConfig, sidecar: str | None,
                   identity: str, vector_file: str | None = None) -> TextVectors:
        self = cls(dim, config, sidecar, identity)
        mapped = vecfile.read(vector_file, identity, dim) if vector_file else None
        if mapped is not None:
            with store.snapshot():  # lines committed after the file, and whether it holds every line before them
                fresh = list(store.text_vector_rows(after_id=int(mapped[0]["id"].max()) if len(mapped[0]) else -1))
                if store.text_line_total() - len(fresh) != len(mapped[0]):
                    log.info("vector file %s does not match %s; it will be rewritten", vector_file, store.path)
                    mapped = None
        if mapped is not None:
            self._from_file(*mapped)
            self.filed = len(mapped[0])
            self.add_rows(fresh, to_ann=False)
            for node_id, dead_clip in store.invalidations():  # what was superseded since the file was written
                self.invalidate(node_id, dead_clip)
        else:
            loaded = []
            for video in store.videos():  # one video at a time keeps the loading peak small
                rows = list(store.text_vector_rows(video.id))
                if not rows:
                    continue
                ids, _, kinds, clips, valid, dead, blobs = zip(*rows)
                dead = [NEVER if d is None else d for d in dead]
                vectors = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(rows), dim)
                del rows, blobs
                self.videos[video.id] = vv = VideoVectors(dim)
                vv.add(ids, clips, kinds, valid, dead, vectors)
                self._size = None
                loaded.append((vv.index.ids, video.id))
            if loaded:
                self.where.load(np.concatenate([ids for ids, _ in loaded]),
                                np.concatenate([np.full(len(ids), v, np.int64) for ids, v in loaded]),
                                np.concatenate([np.arange(len(ids)) for ids, _ in loaded]))
        self._load_sidecar()
        return self

    def _from_file(self, rows: np.ndarray, vectors: np.ndarray, reader: vecfile.RowReader | None = None) -> None:
        """Per-video views of the mapped file: it is written video by video, so a video is a run of rows
        (a video in several runs, which only a hand-made file has, is still read right, its later runs copied)."""
        if not len(rows):
            return
        video = rows["video"].astype(np.int64)
        starts = np.concatenate([[0], np.flatnonzero(np.diff(video)) + 1]).tolist()
        row_in_video = np.empty(len(rows), np.int64)
        for start, end in zip(starts, starts[1:] + [len(rows)]):
            part = rows[start:end]
            vv = self.videos.setdefault(int(video[start]), VideoVectors(self.dim))
            row_in_video[start:end] = np.arange(len(vv), len(vv) + end - start)
            vv.add(part["id"], part["clip"], part["kind"], part["valid_from"], np.full(end - start, NEVER, np.int32),
                   vectors[start:end])
            self._size = None
        self.where.load(rows["id"].astype(np.int64), video, row_in_video, np.arange(len(rows)))
        self._file_vectors, self._file_rows = vectors, reader

    def __len__(self) -> int:
        if self._size is None:  # summed once per change: a search asks several times, over every video
            self._size = sum(len(v) for v in self.videos.values())
        return self._size

    def add(self, video_id: int, ids, clips, kinds, valid_from, vectors) -> None:
        self._add(video_id, ids, clips, kinds, valid_from, [NEVER] * len(ids), vectors, to_ann=True)

    def add_rows(self, rows: list, to_ann: bool) -> None:
        """Add rows as :meth:`SQLiteStore.text_vector_rows` gives them (lines committed after a load)."""
        for video_id in dict.fromkeys(r[1] for r in rows):
            part = [r for r in rows if r[1] == video_id]
            ids, _, kinds, clips, valid, dead, blobs = zip(*part)
            self._add(video_id, ids, clips, kinds, valid, [NEVER if d is None else d for d in dead],
                      np.frombuffer(b"".join(blobs), np.float32).reshape(len(part), self.dim), to_ann=to_ann)

    def _add(self, video_id, ids, clips, kinds, valid_from, dead, vectors, to_ann: bool) -> None:
        if len(ids) == 0:
            return
        vv = self.videos.get(video_id)
        if vv is None:
            vv = self.videos[video_id] = VideoVectors(self.dim)
        start = len(vv)
        vv.add(ids, clips, kinds, valid_from, dead, vectors)
        self._size = None
        for offset, node_id in enumerate(np.asarray(ids).tolist()):
            self.where.add(int(node_id), video_id, start + offset)
        if to_ann and self.ann is not None:
            self.ann.add(np.asarray(ids, np.int64), vectors)
            self._ann_dirty = True

    def invalidate(self, node_id: int, at_clip: int | None) -> None:
        hit = self.where.get(node_id)
        if hit is not None:
            self.videos[hit[0]].dead_at[hit[1]] = NEVER if at_clip is None else at_clip
            if self._flat is not None:
                pos, found = self._flat_ids.find(np.array([node_id]))
                if found[0]:
                    self._flat["dead_at"][pos[0]] = NEVER if at_clip is None else at_clip

    def _facts(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where each of ``ids`` is in one id-sorted table of every line's video, clip, kind and validity
        (built at the first ANN search, so that candidates are filtered without a loop), and whether it is
        there: lines added later are not (the caller looks those up one by one)."""
        if self._flat is None:
            parts = [(v, vv) for v, vv in self.videos.items() if len(vv)]
            flat = {"id": np.concatenate([vv.index.ids for _, vv in parts]) if parts else np.zeros(0, np.int64),
                    "video": np.concatenate([np.full(len(vv), v, np.int64) for v, vv in parts]) if parts
                    else np.zeros(0, np.int64)}
            for name in ("clip", "kind", "valid_from", "dead_at"):
                flat[name] = np.concatenate([getattr(vv, name) for _, vv in parts]) if parts else np.zeros(0, np.int32)
            order = np.argsort(flat["id"], kind="stable")
            self._flat = {name: column[order] for name, column in flat.items()}
            self._flat_ids = SortedIds(self._flat["id"])
        return self._flat_ids.find(ids)

    def vectors_of(self, ids: np.ndarray) -> np.ndarray:
        """The vectors of these lines, in order: one gather from the mapped file for the lines it holds."""
        ids = np.asarray(ids, np.int64).reshape(-1)
        out = np.empty((len(ids), self.dim), np.float32)
        at = self.where.file_rows(ids)
        filed = at >= 0
        if filed.any():
            rows = at[filed]
            if self._file_rows is not None and len(rows) <= SCATTERED_ROWS:
                out[filed] = self._file_rows.rows(rows)  # read: the mapping's pages stay out of the resident set
            else:
                out[filed] = self._file_vectors[rows]
        rest = np.flatnonzero(~filed)
        for pos, (video_id, row) in zip(rest.tolist(), self.where.get_many(ids[rest])):
            out[pos] = self.videos[video_id].index.vectors[row]
        return out

    # ------------------------------------------------------------------ ANN lifecycle
    def _ann_wanted(self, n_scope: int) -> bool:
        backend = self.config.backend
        if backend == "flat":
            return False
        if backend == "ivf":
            return n_scope > 0
        return n_scope > self.config.ann_threshold

    def _load_sidecar(self) -> None:
        if not self.sidecar or not os.path.exists(self.sidecar):
            return
        from m3agent.memory.index.ivf import IVFIndex, current, read_header

        try:
            if not current(read_header(self.sidecar)):
                log.info("vector index %s was built by an older version; it will be rebuilt", self.sidecar)
                return
            ann = IVFIndex.load(self.sidecar)
        except Exception as exc:  # a damaged cache is rebuilt, never trusted
            log.warning("ignoring unreadable vector index %s: %s", self.sidecar, exc)
            return
        if ann.meta.get("identity") != self.identity or ann.dim != self.dim:
            log.info("vector index %s belongs to another DB state; it will be rebuilt", self.sidecar)
            return
        self._ann_dirty = ann.legacy  # a file of the older layout is written again in the mapped one
        covered = int(ann.meta.get("max_id", -1))
        missing = self.where.ids_above(covered)
        if len(missing):
            ann.add(np.asarray(missing, np.int64), self.vectors_of(np.asarray(missing)))
            self._ann_dirty = True
        ann.refine = self.vectors_of
        self.ann = ann

    def build_ann(self, progress=None) -> None:
        from m3agent.memory.index.ivf import IVFIndex

        parts = [vv.index for vv in self.videos.values() if len(vv)]
        ids = np.concatenate([p.ids for p in parts]) if parts else np.zeros(0, np.int64)
        matrix = np.concatenate([p.vectors for p in parts]) if parts else np.zeros((0, self.dim), np.float32)
        ann = IVFIndex(self.dim)
        ann.build(ids, matrix, target_recall=self.config.target_recall, nprobe=self.config.nprobe, progress=progress)
        del matrix
        ann.refine = self.vectors_of
        self.ann = ann
        self._ann_dirty = True
        self.save()

    def drop_ann(self) -> None:
        """Forget the ANN index and its file (after deletions: its codes may hold removed data)."""
        self.ann = None
        self._ann_dirty = False
        if self.sidecar and os.path.exists(self.sidecar):
            os.remove(self.sidecar)

    def save(self) -> None:
        """Write the ANN index file if it changed. It is a cache: where it cannot be written (a full
        disk, a read-only folder) it is rebuilt next time, and nothing is lost."""
        if self.ann is None or not self._ann_dirty or not self.sidecar:
            return
        self.ann.meta["identity"] = self.identity
        self.ann.meta["max_id"] = self.where.max_id()
        tmp = self.sidecar + ".tmp"
        try:
            touch_private(tmp)
            self.ann.save(tmp)
            os.replace(tmp, self.sidecar)
        except OSError as exc:
            log.warning("could not save vector index %s: %s", self.sidecar, exc)
            with contextlib.suppress(OSError):
                os.remove(tmp)
            return
        self._ann_dirty = False

    def save_file(self, path: str) -> None:
        """Rewrite the vector file when it misses more than 1% of these lines (or is missing or was not
        trusted): lines it misses are read from SQLite on open, which is cheap for a few thousand."""
        n = len(self)
        if n == 0 or n - self.filed <= n // 100:
            return
        parts = []
        for video_id, vv in self.videos.items():
            if not len(vv):
                continue
            rows = np.zeros(len(vv), vecfile.ROW)
            rows["id"], rows["video"], rows["clip"] = vv.index.ids, video_id, vv.clip
            rows["kind"], rows["valid_from"] = vv.kind, vv.valid_from
            parts.append((rows, vv.index.vectors))
        if vecfile.write(path, self.identity, self.dim, parts):
            self.filed = n

    # ------------------------------------------------------------------ search
    def top_lines(self, queries: np.ndarray, video_ids: list[int] | None, before_clip: int | None,
                  want: int, restrict: np.ndarray | None = None, kinds=DECLARATIVE_KINDS) -> LineHits:
        """The ``want`` best visible lines of ``kinds`` in scope (max score over the query variants)."""
        queries = np.asarray(queries, np.float32).reshape(-1, self.dim)
        scope = self.scope(video_ids)
        in_scope = set(scope)
        n_scope = self.lines_in(in_scope)
        kinds = tuple(int(k) for k in kinds)
        if restrict is None and self._ann_wanted(n_scope):
            if self.ann is None:
                log.info("building the approximate vector index over %d lines (kept in %s)", len(self), self.sidecar)
                self.build_ann(progress=log.info)
            hits = self._ann_lines(queries, in_scope, before_clip, want, n_scope, kinds)
            if hits is not None:
                return hits
        return self._exact_lines(queries, scope, before_clip, want, restrict, kinds)

    def everywhere(self, scope: set[int]) -> bool:
        """Whether a scope (videos that hold lines, :meth:`scope`) is every video."""
        return len(scope) == len(self.videos)

    def lines_in(self, scope: set[int]) -> int:
        """How many lines the videos of ``scope`` hold (every line without a sum over a hundred videos)."""
        return len(self) if self.everywhere(scope) else sum(len(self.videos[v]) for v in scope)

    def scope(self, video_ids: list[int] | None) -> list[int]:
        """The videos searched that hold lines (all with None)."""
        return list(self.videos) if video_ids is None else [v for v in video_ids if v in self.videos]

    def id_ranges(self, video_ids: list[int] | None) -> list[tuple[int, int]] | None:
        """Inclusive node-id ranges covering the lines of these videos (None: every line), for an index
        that can only filter by id (the lexical one). Neighbouring videos in scope share one range; what
        a range holds beyond the scope is filtered out afterwards (:meth:`eligible`)."""
        wanted = set(self.scope(video_ids)) if video_ids is not None else set(self.videos)
        if video_ids is None or wanted == set(self.videos):
            return None
        merged: list[tuple[int, int]] = []
        joined = False  # the last range ends with a video in scope and may be extended
        for lo, hi, video_id in sorted((*vv.id_range(), v) for v, vv in self.videos.items()):
            if video_id not in wanted:
                joined = False
                continue
            if joined:
                merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
            else:
                merged.append((lo, hi))
            joined = True
        return merged

    def eligible(self, ids, video_ids: list[int] | None, before_clip: int | None, kinds=DECLARATIVE_KINDS,
                 restrict: np.ndarray | None = None) -> LineHits:
        """Of the candidate line ``ids`` (from another index), those a search with these filters may
        return, in the given order, with ``scores`` left at zero for the caller to fill."""
        ids = np.asarray([int(i) for i in ids], np.int64)
        if restrict is not None:
            ids = ids[np.isin(ids, np.asarray(restrict, np.int64))]
        scope, kind_ok = set(self.scope(video_ids)), _kind_table(kinds)
        if self._flat is None:  # no filter table (the IVF path builds it, over every line): a few dozen lookups
            return self._lines_one_by_one(ids, scope, before_clip, kind_ok)
        keep_ids, keep_vid, keep_clip = self._filter(ids, scope, before_clip, kind_ok)
        return LineHits(keep_ids, keep_vid, keep_clip, np.zeros(len(keep_ids), np.float32), True)

    def _exact_lines(self, queries, scope, before_clip, want, restrict, kinds=DECLARATIVE_KINDS) -> LineHits:
        parts_ids, parts_vid, parts_clip, parts_score = [], [], [], []
        restrict_set = None if restrict is None else set(np.asarray(restrict).tolist())
        for video_id in scope:
            vv = self.videos[video_id]
            if restrict_set is None:
                rows = np.flatnonzero(vv.visible(before_clip, kinds))
                if len(rows) == len(vv):
                    scores = vv.index.scores(queries).max(axis=0)
                    rows = np.arange(len(vv))
                else:
                    scores = vv.index.scores(queries, rows).max(axis=0)
            else:
                hits = (self.where.get(i) for i in restrict_set)
                rows = np.array(sorted(h[1] for h in hits if h is not None and h[0] == video_id), dtype=np.int64)
                if len(rows):
                    rows = rows[vv.visible(before_clip, kinds)[rows]]
                scores = vv.index.scores(queries, rows).max(axis=0) if len(rows) else np.zeros(0, np.float32)
            parts_ids.append(vv.index.ids[rows])
            parts_vid.append(np.full(len(rows), video_id, np.int64))
            parts_clip.append(vv.clip[rows])
            parts_score.append(scores.astype(np.float32))
        if not parts_ids:
            empty = np.zeros(0, np.int64)
            return LineHits(empty, empty, empty.astype(np.int32), empty.astype(np.float32), True)
        ids, vids = np.concatenate(parts_ids), np.concatenate(parts_vid)
        clips, scores = np.concatenate(parts_clip), np.concatenate(parts_score)
        complete = want >= len(ids)
        if not complete:
            top = np.argpartition(-scores, want - 1)[:want]
            ids, vids, clips, scores = ids[top], vids[top], clips[top], scores[top]
        order = np.lexsort((ids, -scores))
        return LineHits(ids[order], vids[order], clips[order], scores[order], complete)

    def _ann_lines(self, queries, scope: set[int], before_clip, want, n_scope, kinds) -> LineHits | None:
        """ANN candidates filtered to scope and visibility, ordered by the index's 8-bit codes and the best
        re-scored exactly (one read of those rows for every query variant); None when the filter is too
        selective."""
        n_all = len(self)
        fetch = max(want, 64)
        kind_ok = _kind_table(kinds)
        while True:
            cand = self.ann.candidates(queries, fetch * self.ann.refine_factor)  # first: shortlist(want)
            ids = cand[cand >= 0]
            if len(cand) > 1:  # one query's candidates are distinct; several queries' may repeat
                ids = np.sort(ids)
                ids = ids[np.concatenate(([True], ids[1:] != ids[:-1]))] if len(ids) else ids  # np.unique, 6x faster
            keep_ids, keep_vid, keep_clip = self._filter(ids, scope, before_clip, kind_ok)
            exhausted = cand.shape[1] >= n_all
            if len(keep_ids) >= want or exhausted:
                break
            if fetch * 4 > n_scope and n_scope < n_all / 4:
                return None  # the scope is a small part of the DB: exact search is cheaper
            fetch *= 4
        if len(keep_ids) == 0:
            empty = np.zeros(0, np.int64)
            return LineHits(empty, empty, empty.astype(np.int32), empty.astype(np.float32), exhausted)
        order, scores, approximate = self._rerank(queries, keep_ids, want + EXACT_MARGIN)
        if approximate:  # the best exactly (one read of their rows for every query variant); the rest as coded
            top = order[: min(want, EXACT_LINES) + EXACT_MARGIN]
            scores[: len(top)] = (queries @ self.vectors_of(keep_ids[top]).T).max(axis=0)
        best = np.lexsort((keep_ids[order], -scores))[:want]
        order, scores = order[best], scores[best].astype(np.float32)
        return LineHits(keep_ids[order], keep_vid[order].astype(np.int64), keep_clip[order].astype(np.int32),
                        scores, exhausted and len(keep_ids) <= want)

    def _filter(self, ids: np.ndarray, scope: set[int], before_clip, kind_ok: np.ndarray,
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(ids, video ids, clips)`` of the candidate ``ids``, in their order, held in ``scope``, of an allowed kind
        (``kind_ok``, see :func:`_kind_table`) and visible: by table lookups for the lines of the filter table
        (:meth:`_facts`), one by one for lines added after it was built."""
        pos, found = self._facts(ids)
        flat = self._flat
        video, clip = flat["video"][pos], flat["clip"][pos].astype(np.int32)
        ok = found & kind_ok[flat["kind"][pos].astype(np.uint8)]
        ok &= visible(clip, flat["valid_from"][pos], flat["dead_at"][pos], before_clip)
        everywhere = self.everywhere(scope)
        if not everywhere:
            ok &= np.isin(video, np.fromiter(scope, np.int64, len(scope)))
        if not found.all():  # lines added after the table was built
            rest = np.flatnonzero(~found)
            more = self._lines_one_by_one(ids[rest], None if everywhere else scope, before_clip, kind_ok)
            rest = rest[np.isin(ids[rest], more.ids)]
            ok[rest], video[rest], clip[rest] = True, more.video_ids, more.clips
        return ids[ok], video[ok], clip[ok]

    def _lines_one_by_one(self, ids: np.ndarray, scope: set[int] | None, before_clip, kind_ok: np.ndarray,
                          ) -> LineHits:
        """Of ``ids``, in their order, the lines held in ``scope`` (None: any video) of an allowed kind
        (``kind_ok``, see :func:`_kind_table`) and visible, looked up one by one: for a few dozen lexical
        candidates, or the lines added after the filter table was built."""
        out_ids, out_vid, out_clip = [], [], []
        for node_id, hit in zip(ids.tolist(), self.where.get_many(ids)):
            if hit is None or (scope is not None and hit[0] not in scope):
                continue
            video_id, row = hit
            vv = self.videos[video_id]
            clip = int(vv.clip[row])
            if not kind_ok[int(vv.kind[row]) & 255] or not visible(clip, int(vv.valid_from[row]),
                                                                   int(vv.dead_at[row]), before_clip):
                continue
            out_ids.append(node_id)
            out_vid.append(video_id)
            out_clip.append(clip)
        return LineHits(np.asarray(out_ids, np.int64), np.asarray(out_vid, np.int64), np.asarray(out_clip, np.int32),
                        np.zeros(len(out_ids), np.float32), True)

    def _rerank(self, queries: np.ndarray, ids: np.ndarray, want: int) -> tuple[np.ndarray, np.ndarray, bool]:
        """``(positions, scores, approximate)``: the positions in ``ids`` of the ``want`` best lines (ties by id)
        with their scores, from the index's 8-bit copies of the vectors (``approximate``; exact vectors for lines
        it has none of) or, for a list no longer than ``want`` or an index without copies, exact."""
        rerank = self.ann.rerank if self.ann is not None else None
        if rerank is None or len(ids) <= want:
            scores, approximate = (queries @ self.vectors_of(ids).T).max(axis=0), False
        else:
            by_code, held = rerank.scores(queries, ids)
            scores, approximate = by_code.max(axis=0), True
            if not held.all():
                scores[~held] = (queries @ self.vectors_of(ids[~held]).T).max(axis=0)
        order = np.lexsort((ids, -scores))[:want]
        return order, scores[order], approximate


class VectorCache:
    """The text vectors of one DB, loaded on first use and kept in step with the store.

    The writer adds what this process commits (:meth:`loaded` is None until someone searched, and then
    nothing needs adding); :meth:`catch_up` adds what other processes committed; :meth:`reset` drops
    everything after node ids were removed, together with the ANN file that may hold their codes.
    """

    def __init__(self, store: SQLiteStore, config: IndexConfig, sidecar: str, dim: int, vector_file: str = ""):
        self.store, self.config, self.sidecar, self.dim = store, config, sidecar, dim
        self.vector_file = vector_file  # the vectors, memory-mapped (m3agent.memory.vecfile); "" for none
        self._vectors: TextVectors | None = None

    @property
    def loaded(self) -> TextVectors | None:
        return self._vectors

    def get(self) -> TextVectors:
        if self._vectors is None:
            self._vectors = TextVectors.from_store(self.store, self.dim or 1, self.config, self.sidecar,
                                                   self.store.identity(), self.vector_file or None)
        return self._vectors

    def catch_up(self, ids_removed: bool) -> None:
        """Take in what other connections committed since this cache was filled."""
        vectors = self._vectors
        if vectors is None:
            return
        if ids_removed:
            self._vectors = None
            return
        vectors.add_rows(list(self.store.text_vector_rows(after_id=vectors.where.max_id())), to_ann=True)
        for node_id, dead_clip in self.store.invalidations():
            vectors.invalidate(node_id, dead_clip)

    def reset(self) -> None:
        """Forget every vector, the ANN file and the vector file (after a deletion: they may hold removed data)."""
        if self.vector_file:
            vecfile.remove(self.vector_file)
        if self._vectors is not None:
            self._vectors.drop_ann()
            self._vectors = None
        elif os.path.exists(self.sidecar):
            os.remove(self.sidecar)

    def save(self) -> None:
        """Write the ANN index file if it changed (see :meth:`TextVectors.save`) and the vector file if it is
        far behind, and only while they still describe the DB: after another process forgot someone, files
        written from what was loaded before would put the forgotten lines back on disk."""
        if self._vectors is None and self.vector_file and not self.store.readonly and self._file_far_behind():
            self.get()  # a writer that never searched (memorizing): readers cannot write the file, so it does
        if self._vectors is not None and not self.store.readonly and self._vectors.identity == self.store.identity():
            self._vectors.save()
            if self.vector_file:
                self._vectors.save_file(self.vector_file)

    def _file_far_behind(self) -> bool:
        """Whether the vector file is missing, for another DB state, or short of more than 1% of the lines (by
        node ids, an upper bound that costs no scan)."""
        last = self.store.next_node_id() - 1
        if last < 0:
            return False
        head = vecfile.header(self.vector_file)
        if head is None or head.get("identity") != self.store.identity():
            return True
        return last - int(head.get("max_id", -1)) > int(head.get("rows", 0)) // 100
