"""M3-Agent memory search over the graph.

Rules (DESIGN.md section 3): ``<character_k>`` in a query expands to each of its face/voice tags
(one query variant per combination, score = best variant); a query naming entities searches only
the lines linked to them; each clip scores as its best line; the top-k clips at or above the
threshold that this question has not been shown yet come back whole, tags translated to characters and
``Equivalence:`` lines left out; ``before_clip`` hides everything after that clip (inclusive
cut-off, as M3-Agent); a query asking for a character id returns the best individual lines.

Search sees the memory through a narrow :class:`SearchContext` (the store's rows, the vector cache,
characters, an embed function and the settings), never through the graph facade that composes them.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from m3agent.config import SearchConfig
from m3agent.errors import M3AgentError
from m3agent.memory.characters import CharacterMap, Characters
from m3agent.memory.store import SQLiteStore
from m3agent.memory.tags import is_equivalence
from m3agent.memory.vectors import TextVectors
from m3agent.memory.visibility import NEVER, node_visible

CHARACTER_ID_QUERY = re.compile(r"\bcharacter[\s_-]*ids?\b", re.IGNORECASE)


class QueryError(M3AgentError, ValueError):
    """A search or question that could only find nothing: empty text, or a ``before_clip`` that is no clip."""


def check_query(query: str) -> str:
    """``query`` with its whitespace normalized; an empty one is an error (it could only find nothing)."""
    query = " ".join(str(query).split())
    if not query:
        raise QueryError("the search query is empty")
    return query


def check_before_clip(value: object) -> int | None:
    """``before_clip`` as a clip number >= 0, or None (no cut-off); the one rule for the CLI, question files
    and the library. Whole numbers are accepted as ``3``, ``3.0`` or ``"3"``; a bool, a fraction, a negative
    number, NaN or infinity is an error rather than an empty result. A number past any clip a DB can hold
    means what it says: every clip, the same as None."""
    if value is None:
        return None
    number = value
    if isinstance(value, str):
        try:
            number = int(value)
        except ValueError:
            pass
    if isinstance(number, float) and number.is_integer():
        number = int(number)
    if isinstance(number, bool) or not isinstance(number, numbers.Integral) or number < 0:
        raise QueryError(f"before_clip must be a clip number >= 0 (got {value!r})")
    return None if number >= NEVER else int(number)


@dataclass(frozen=True)
class SearchContext:
    """What a search reads: rows, vectors, characters, query embedding and settings."""

    store: SQLiteStore
    vectors: TextVectors
    characters: Characters
    embed: Callable[[Sequence[str]], np.ndarray]
    config: SearchConfig
    default_threshold: float  # the embedder's relevance threshold, used when config.threshold is None


@dataclass
class SeenClips:
    """The ``(video, clip)`` pairs already returned to one question: its later searches skip them."""

    clips: set[tuple[int, int]] = field(default_factory=set)


@dataclass
class ClipHit:
    video_id: int
    video: str
    id: int
    start: float
    end: float
    score: float
    lines: list[str]

    def to_dict(self, with_video: bool = False) -> dict:
        out = {"id": self.id, "start": self.start, "end": self.end, "score": round(self.score, 4), "lines": self.lines}
        if with_video:
            out = {"video": self.video, **out}
        return out


@dataclass
class SearchResult:
    query: str
    mode: str  # "clips" or "lines"
    clips: list[ClipHit]
    variants: int = 1

    @property
    def empty(self) -> bool:
        return not self.clips

    def to_dict(self) -> dict:
        multi = len({c.video_id for c in self.clips}) > 1
        return {"clips": [c.to_dict(with_video=multi) for c in self.clips]}


def with_character_ids(query: str, names: dict[int, str]) -> str:
    """``query`` with each known name (a whole word, any case) replaced by its ``<character_k>``."""
    for character, name in sorted(names.items(), key=lambda item: -len(item[1])):
        if name:
            query = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", f"<character_{character}>", query, flags=re.IGNORECASE)
    return query


def search_memory(ctx: SearchContext, query: str, *, video: int | str | None = None, all_videos: bool = False,
                  top_k: int | None = None, threshold: float | None = None, before_clip: int | None = None,
                  seen: SeenClips | None = None) -> SearchResult:
    cfg, store = ctx.config, ctx.store
    query = " ".join(str(query).split())
    before_clip = check_before_clip(before_clip)
    videos = store.videos()
    if all_videos:
        scope = [v.id for v in videos]
        cmap = ctx.characters.across_videos(before_clip)
    else:
        scope = [store.resolve_video(video).id]
        cmap = ctx.characters.of(scope[0], before_clip)
    names = {v.id: v.name for v in videos}
    if not query:
        return SearchResult(query, "clips", [])
    variants = cmap.expand(query, cfg.max_query_variants)
    if cfg.name_variants and not all_videos:
        named = with_character_ids(query, ctx.characters.names(scope[0], before_clip))
        if named != query:  # also match the lines that tag the people the query names
            variants += cmap.expand(named, cfg.max_query_variants)[: max(0, cfg.max_query_variants - len(variants))]
    entity_ids = cmap.entity_ids(query)
    restrict = np.asarray(store.texts_linked_to(entity_ids), np.int64) if entity_ids else None
    queries = ctx.embed(variants)
    vectors = ctx.vectors

    if CHARACTER_ID_QUERY.search(query):
        k = top_k or cfg.line_top_k
        hits = vectors.top_lines(queries, scope, before_clip, k, restrict)
        return SearchResult(query, "lines", _line_groups(store, hits, cmap, names), len(variants))

    k = top_k or cfg.top_k
    thr = threshold if threshold is not None else cfg.threshold
    if thr is None:
        thr = ctx.default_threshold
    already = seen.clips if seen is not None else set()
    want = max(8 * k, 32)
    while True:
        hits = vectors.top_lines(queries, scope, before_clip, want, restrict)
        chosen: dict[tuple[int, int], float] = {}
        below = False
        for vid, clip, score in zip(hits.video_ids.tolist(), hits.clips.tolist(), hits.scores.tolist()):
            if score < thr:
                below = True
                break
            key = (vid, clip)
            if key in already or key in chosen:
                continue
            chosen[key] = score
            if len(chosen) == k:
                break
        if len(chosen) == k or below or hits.complete:
            break
        want *= 4
    if seen is not None:
        seen.clips.update(chosen)
    clips = [_clip_hit(store, vid, clip, score, cmap, names, before_clip) for (vid, clip), score in chosen.items()]
    return SearchResult(query, "clips", clips, len(variants))


def _clip_hit(store: SQLiteStore, video_id, clip, score, cmap: CharacterMap, names, before_clip) -> ClipHit:
    start, end = store.clip_spans(video_id, [clip]).get(clip, (float("nan"), float("nan")))
    lines = [
        cmap.translate(n.text)
        for n in store.text_nodes(video_id, clips=[clip])
        if not is_equivalence(n.text) and node_visible(n, before_clip)
    ]
    return ClipHit(video_id, names.get(video_id, str(video_id)), clip, start, end, score, lines)


def _line_groups(store: SQLiteStore, hits, cmap: CharacterMap, names) -> list[ClipHit]:
    """Best individual lines grouped by clip, clips in time order (M3-Agent's id lookup)."""
    nodes = {n.id: n for n in store.text_nodes(ids=hits.ids.tolist())}
    groups: dict[tuple[int, int], ClipHit] = {}
    for node_id, vid, clip, score in zip(hits.ids.tolist(), hits.video_ids.tolist(), hits.clips.tolist(),
                                         hits.scores.tolist()):
        node = nodes.get(node_id)
        if node is None or is_equivalence(node.text):
            continue
        hit = groups.get((vid, clip))
        if hit is None:
            start, end = store.clip_spans(vid, [clip]).get(clip, (float("nan"), float("nan")))
            hit = groups[(vid, clip)] = ClipHit(vid, names.get(vid, str(vid)), clip, start, end, score, [])
        hit.lines.append(cmap.translate(node.text))
    return [groups[key] for key in sorted(groups)]
