"""M3-Agent memory search over the graph.

Rules (DESIGN.md section 3): ``<character_k>`` in a query expands to each of its face/voice tags
(one query variant per combination, score = best variant); a query naming entities searches only
the lines linked to them; each clip scores as its best line; the top-k clips at or above the
threshold that this question has not been shown yet come back whole, tags translated to characters and
``Equivalence:`` lines left out; ``before_clip`` hides everything after that clip (inclusive
cut-off, as M3-Agent); a query asking for a character id returns the best individual lines.

Fused search (``SearchConfig.retrieval``, the default) ranks lines by reciprocal-rank fusion of the
vector ranking (lines at or above the threshold) and BM25 from the DB's lexical index
(:mod:`m3agent.memory.lexical`); "dense" is M3-Agent's vector search alone, "lexical" BM25 alone. A clip
reports the cosine similarity of its best line as ``score`` whatever ranked it. Procedural lines (how to act)
are searched only when asked for (``kinds``), never mixed into what happened.

Search sees the memory through a narrow :class:`SearchContext` (the store's rows, the vector cache,
characters, an embed function and the settings), never through the graph facade that composes them.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from m3agent.config import RETRIEVAL_MODES, SearchConfig
from m3agent.errors import M3AgentError
from m3agent.memory.characters import CharacterMap, Characters
from m3agent.memory.lexical import LexicalIndex
from m3agent.memory.model import DECLARATIVE_KINDS, NodeKind
from m3agent.memory.store import SQLiteStore
from m3agent.memory.tags import is_equivalence
from m3agent.memory.vectors import LineHits, TextVectors
from m3agent.memory.visibility import NEVER, visible

CHARACTER_ID_QUERY = re.compile(r"\bcharacter[\s_-]*ids?\b", re.IGNORECASE)


class QueryError(M3AgentError, ValueError):
    """A search or question that could only find nothing: empty text, or a ``before_clip`` that is no clip."""


def check_query(query: str) -> str:
    """``query`` with its whitespace normalized; an empty one is an error (it could only find nothing)."""
    query = " ".join(str(query).split())
    if not query:
        raise QueryError("the search query is empty")
    return query


def check_before_clip(value: object, *, gaps: bool = False) -> int | None:
    """``before_clip`` as a clip number >= 0, or None (no cut-off); the one rule for the CLI, question files,
    training rows, environments and the library. Whole numbers are accepted as ``3``, ``3.0`` or ``"3"``; a
    bool, a fraction, a negative number, NaN or infinity is an error rather than an empty result. A number past
    any clip a DB can hold means what it says: every clip, the same as None. ``gaps``: the value comes from a
    table row (a Parquet column with gaps holds NaN where a row has none), so NaN means None there."""
    if value is None or (gaps and value != value):  # NaN is the only value not equal to itself
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


#: the most clips or lines one search returns: more is no search, and SQLite's integers end at 2**63
MAX_RESULTS = 10_000


def check_count(name: str, value: object) -> int | None:
    """``top_k`` or ``lines`` as a whole number from 1 to :data:`MAX_RESULTS`, or None (the default)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 1 <= value <= MAX_RESULTS:
        raise QueryError(f"{name} must be a whole number from 1 to {MAX_RESULTS:,} (got {value!r})")
    return int(value)


def check_threshold(name: str, value: object) -> float | None:
    """A relevance threshold: a cosine similarity from -1 to 1, or None (the embedder's). NaN or infinity is an
    error, not a search that silently finds nothing or everything."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not -1.0 <= float(value) <= 1.0:
        raise QueryError(f"{name} must be a cosine similarity from -1 to 1 (got {value!r})")
    return float(value)


@dataclass(frozen=True)
class SearchContext:
    """What a search reads: rows, vectors, characters, query embedding and settings."""

    store: SQLiteStore
    vectors: TextVectors
    characters: Characters
    embed: Callable[[Sequence[str]], np.ndarray]
    config: SearchConfig
    default_threshold: float  # the embedder's relevance threshold, used when config.threshold is None
    lexical: LexicalIndex | None = None  # None: vectors only


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
    score: float  # cosine similarity of the clip's best line to the query
    lines: list[str]
    rank_score: float = 0.0  # what clips are ordered by: the fused score (the cosine without hybrid search)
    lexical: float = 0.0  # BM25 of the clip's best lexical line (0: no word matched)

    def to_dict(self, with_video: bool = False) -> dict:
        out = {"id": self.id, "start": self.start, "end": self.end, "score": round(self.score, 4),
               "rank_score": round(self.rank_score, 6), "lexical": round(self.lexical, 4), "lines": self.lines}
        if with_video:
            out = {"video": self.video, **out}
        return out


@dataclass
class RankedLines:
    """Lines in their final order, with each one's fused, dense (cosine) and lexical (BM25) score."""

    ids: np.ndarray
    video_ids: np.ndarray
    clips: np.ndarray
    fused: np.ndarray
    dense: np.ndarray
    lexical: np.ndarray
    complete: bool  # no eligible line above the threshold was left out of the dense ranking

    def __len__(self) -> int:
        return len(self.ids)


def rrf(rankings: Sequence[Sequence[int]], k: int) -> dict[int, float]:
    """Reciprocal-rank fusion: each ranking adds ``1 / (k + rank)`` (rank from 1) to the ids it holds."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, node_id in enumerate(ranking, start=1):
            fused[node_id] = fused.get(node_id, 0.0) + 1.0 / (k + rank)
    return fused


def rank_lines(ctx: SearchContext, query: str, queries: np.ndarray, scope: list[int] | None,
               before_clip: int | None, want: int, *, threshold: float | None = None,
               restrict: np.ndarray | None = None, kinds=DECLARATIVE_KINDS) -> RankedLines:
    """The best lines in scope: the ``want`` best by vector (those below ``threshold`` dropped), fused
    with the best by BM25 (``retrieval`` "fused"), or either alone."""
    vectors, cfg = ctx.vectors, ctx.config
    if cfg.retrieval == "lexical":
        dense = LineHits(*(np.zeros(0, t) for t in (np.int64, np.int64, np.int32, np.float32)), True)
    else:
        dense = vectors.top_lines(queries, scope, before_clip, want, restrict, kinds)
    if threshold is not None:
        above = dense.scores >= threshold
        dense = LineHits(dense.ids[above], dense.video_ids[above], dense.clips[above], dense.scores[above],
                         dense.complete or not above.all())
    lexical = _lexical_lines(ctx, query, scope, before_clip, restrict, kinds, max(cfg.lexical_top, want))
    if lexical is None or not len(lexical[0].ids):
        return RankedLines(dense.ids, dense.video_ids, dense.clips, dense.scores.copy(), dense.scores,
                           np.zeros(len(dense.ids), np.float32), dense.complete)
    found, bm25 = lexical
    fused = rrf([dense.ids.tolist(), found.ids.tolist()], cfg.rrf_k)
    where: dict[int, tuple[int, int]] = {}
    for hits in (found, dense):
        where.update(zip(hits.ids.tolist(), zip(hits.video_ids.tolist(), hits.clips.tolist())))
    cosine = dict(zip(dense.ids.tolist(), dense.scores.tolist()))
    extra = [i for i in found.ids.tolist() if i not in cosine]
    if extra:
        sims = (np.asarray(queries, np.float32).reshape(-1, vectors.dim) @ vectors.vectors_of(np.asarray(extra)).T)
        cosine.update(zip(extra, sims.max(axis=0).tolist()))
    order = sorted(fused, key=lambda i: (-fused[i], i))
    return RankedLines(
        np.asarray(order, np.int64), np.asarray([where[i][0] for i in order], np.int64),
        np.asarray([where[i][1] for i in order], np.int32), np.asarray([fused[i] for i in order], np.float32),
        np.asarray([cosine[i] for i in order], np.float32),
        np.asarray([bm25.get(i, 0.0) for i in order], np.float32), dense.complete)


def _lexical_lines(ctx: SearchContext, query: str, scope: list[int] | None, before_clip, restrict, kinds,
                   limit: int) -> tuple[LineHits, dict[int, float]] | None:
    """The best lines by BM25 that this search may return, with their scores; None for a dense search."""
    if ctx.lexical is None or ctx.config.retrieval == "dense" or not ctx.lexical.available:
        return None
    vectors = ctx.vectors
    total = len(vectors)
    if not total:
        return None
    share = vectors.lines_in(set(vectors.scope(scope))) / total
    found = ctx.lexical.search(query, vectors.id_ranges(scope), share, limit)
    bm25 = dict(found)
    return vectors.eligible([i for i, _ in found], scope, before_clip, kinds, restrict), bm25


@dataclass
class SearchResult:
    query: str
    mode: str  # "clips" or "lines"
    clips: list[ClipHit]
    variants: int = 1
    lines: list[dict] = field(default_factory=list)  # with ``lines=K``: the best lines one by one

    @property
    def empty(self) -> bool:
        return not self.clips

    def to_dict(self) -> dict:
        if self.mode == "lines" and self.lines:
            return {"lines": self.lines}
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
                  seen: SeenClips | None = None, lines: int | None = None,
                  kinds: Sequence[NodeKind] = DECLARATIVE_KINDS) -> SearchResult:
    """Clips (or with ``lines``, the best single lines) for ``query``; see the module's rules."""
    if ctx.config.retrieval not in RETRIEVAL_MODES:
        raise QueryError(f"retrieval must be one of {', '.join(RETRIEVAL_MODES)} (got {ctx.config.retrieval!r})")
    cfg, store = ctx.config, ctx.store
    query = " ".join(str(query).split())
    before_clip = check_before_clip(before_clip)
    top_k, lines = check_count("top_k", top_k), check_count("lines", lines)
    threshold = check_threshold("threshold", threshold)
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

    if lines is not None or CHARACTER_ID_QUERY.search(query):
        k = lines or top_k or cfg.line_top_k
        ranked = rank_lines(ctx, query, queries, scope, before_clip, k, threshold=None, restrict=restrict, kinds=kinds)
        return SearchResult(query, "lines", _line_groups(store, ranked, k, cmap, names), len(variants),
                            _line_records(store, ranked, k, cmap, names) if lines is not None else [])

    k = top_k or cfg.top_k
    thr = threshold if threshold is not None else cfg.threshold
    if thr is None:
        thr = ctx.default_threshold
    already = seen.clips if seen is not None else set()
    want = max(8 * k, 32)
    while True:
        ranked = rank_lines(ctx, query, queries, scope, before_clip, want, threshold=thr, restrict=restrict,
                            kinds=kinds)
        chosen: dict[tuple[int, int], int] = {}  # clip -> position of its best line
        for pos, key in enumerate(zip(ranked.video_ids.tolist(), ranked.clips.tolist())):
            if key in already or key in chosen:
                continue
            chosen[key] = pos
            if len(chosen) == k:
                break
        if len(chosen) == k or ranked.complete:
            break
        want *= 4
    if seen is not None:
        seen.clips.update(chosen)
    clips = []
    for (vid, clip), pos in chosen.items():
        of_clip = (ranked.video_ids == vid) & (ranked.clips == clip)
        video_map = ctx.characters.of(vid, before_clip) if all_videos else cmap  # a clip's tags are its video's
        hit = _clip_hit(store, vid, clip, float(ranked.dense[of_clip].max()), video_map, names, before_clip, kinds)
        hit.rank_score, hit.lexical = float(ranked.fused[pos]), float(ranked.lexical[of_clip].max())
        clips.append(hit)
    return SearchResult(query, "clips", clips, len(variants))


def _clip_hit(store: SQLiteStore, video_id, clip, score, cmap: CharacterMap, names, before_clip,
              kinds=DECLARATIVE_KINDS) -> ClipHit:
    start, end = store.clip_spans(video_id, [clip]).get(clip, (float("nan"), float("nan")))
    lines = cmap.translate_many([
        text for text, at, valid_from, dead in store.clip_lines(video_id, clip, kinds)
        if visible(at, at if valid_from is None else valid_from, NEVER if dead is None else dead, before_clip)
        and not is_equivalence(text)
    ])
    return ClipHit(video_id, names.get(video_id, str(video_id)), clip, start, end, score, lines)


def _line_groups(store: SQLiteStore, ranked: RankedLines, k: int, cmap: CharacterMap, names) -> list[ClipHit]:
    """The ``k`` best individual lines grouped by clip, clips in time order (M3-Agent's id lookup)."""
    top = ranked.ids[:k].tolist()
    nodes = {n.id: n for n in store.text_nodes(ids=top, kinds=(*DECLARATIVE_KINDS, NodeKind.PROCEDURAL))}
    groups: dict[tuple[int, int], ClipHit] = {}
    for pos, node_id in enumerate(top):
        node = nodes.get(node_id)
        if node is None or is_equivalence(node.text):
            continue
        vid, clip = int(ranked.video_ids[pos]), int(ranked.clips[pos])
        hit = groups.get((vid, clip))
        if hit is None:
            start, end = store.clip_spans(vid, [clip]).get(clip, (float("nan"), float("nan")))
            hit = groups[(vid, clip)] = ClipHit(vid, names.get(vid, str(vid)), clip, start, end,
                                                float(ranked.dense[pos]), [], float(ranked.fused[pos]),
                                                float(ranked.lexical[pos]))
        hit.lines.append(cmap.translate(node.text))
    return [groups[key] for key in sorted(groups)]


def _line_records(store: SQLiteStore, ranked: RankedLines, k: int, cmap: CharacterMap, names) -> list[dict]:
    """The ``k`` best lines one by one, best first, with their record ids (text sources) and scores."""
    top = ranked.ids[:k].tolist()
    nodes = {n.id: n for n in store.text_nodes(ids=top, kinds=(*DECLARATIVE_KINDS, NodeKind.PROCEDURAL))}
    meta = store.node_meta(top)
    out = []
    for pos, node_id in enumerate(top):
        node = nodes.get(node_id)
        if node is None:
            continue
        about = meta.get(node_id, {})
        out.append({"id": about.get("record"), "node": node_id, "video": names.get(int(ranked.video_ids[pos])),
                    "clip": int(ranked.clips[pos]), "kind": node.kind.label, "text": cmap.translate(node.text),
                    **{key: about[key] for key in ("time", "speaker", "session") if key in about},
                    "score": round(float(ranked.dense[pos]), 4), "rank_score": round(float(ranked.fused[pos]), 6),
                    "lexical": round(float(ranked.lexical[pos]), 4)})
    return out
