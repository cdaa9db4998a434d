"""Persistent identities: group one clip's faces (or voice segments), then match each group to an
existing face/voice node of the video or mark it new.

Grouping is average-linkage agglomerative clustering under the backend's threshold. Matching compares a
group with what each node keeps and takes the closest node under the threshold: faces by the median
distance to the node's snapshots, so one odd snapshot can neither make nor break a match; voices by the mean
distance (``linkage="average"``, the clustering's own measure): one speech segment says little about its
speaker, and a node of many segments is only as close as all of them together say.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

Distance = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Evidence:
    """What memory already says about a video's nodes that may show two of them are two people. Each is a
    hard cannot-link (two people merged into one costs far more than one person split in two): linked to
    different faces, heard in one clip (two people in a conversation), named differently."""

    faces: Mapping[int, frozenset[int]] = field(default_factory=dict)  # the face nodes each is linked to
    clips: Mapping[int, set[int]] = field(default_factory=dict)  # the clips each was heard in
    names: Mapping[int, set[str]] = field(default_factory=dict)  # the names each gave itself
    apart: frozenset[frozenset[int]] = frozenset()  # pairs a person said are two people (m3agent characters)

    def against(self, a: int, b: int) -> list[str]:
        """Why ``a`` and ``b`` cannot be one identity (empty: nothing says so)."""
        reasons = ["kept apart by a person"] if frozenset((a, b)) in self.apart else []
        fa, fb = self.faces.get(a, frozenset()), self.faces.get(b, frozenset())
        if fa and fb and not fa & fb:
            reasons.append(f"linked to different faces ({_listed(fa)} / {_listed(fb)})")
        both = set(self.clips.get(a, ())) & set(self.clips.get(b, ()))
        if both:
            reasons.append(f"heard in the same clip ({_listed(both)})")
        na = {n.casefold() for n in self.names.get(a, ())}
        nb = {n.casefold() for n in self.names.get(b, ())}
        if na and nb and not na & nb:
            reasons.append(f"named differently ({_listed(self.names[a])} / {_listed(self.names[b])})")
        return reasons

    def checked(self, a: int, b: int) -> dict:
        """What was known of the pair when it was folded: the record a fold keeps."""
        return {"faces": [sorted(self.faces.get(a, ())), sorted(self.faces.get(b, ()))],
                "clips": [sorted(self.clips.get(a, ())), sorted(self.clips.get(b, ()))],
                "names": [sorted(self.names.get(a, ())), sorted(self.names.get(b, ()))],
                "checked": ["different faces", "heard in one clip", "different names"]}


@dataclass(frozen=True)
class Fold:
    """A later node found to be an earlier one, with the evidence it was folded on."""

    gone: int
    into: int
    evidence: dict


def _listed(items) -> str:
    return ", ".join(str(i) for i in sorted(items))


def euclidean_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.atleast_2d(a), np.atleast_2d(b)
    return np.sqrt(np.maximum((a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2 * a @ b.T, 0))


def cosine_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.atleast_2d(a), np.atleast_2d(b)
    a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return 1.0 - a @ b.T


def cluster(embeddings: np.ndarray, threshold: float, distance: Distance,
            cannot: np.ndarray | None = None) -> list[list[int]]:
    """Average-linkage clusters of rows whose mean pairwise distance stays <= ``threshold``. ``cannot``: an
    ``n x n`` boolean matrix of rows that are known to be two identities; no cluster holds such a pair, however
    close they are."""
    n = len(embeddings)
    if n == 0:
        return []
    groups = [[i] for i in range(n)]
    d = distance(embeddings, embeddings).astype(np.float64)
    link = d.copy()
    np.fill_diagonal(link, np.inf)
    blocked = np.zeros((n, n), bool) if cannot is None else np.array(cannot, bool) | np.array(cannot, bool).T
    link[blocked] = np.inf
    active = list(range(n))
    while len(active) > 1:
        sub = link[np.ix_(active, active)]
        i, j = np.unravel_index(np.argmin(sub), sub.shape)
        if sub[i, j] > threshold:
            break
        a, b = active[i], active[j]
        na, nb = len(groups[a]), len(groups[b])
        merged = (link[a] * na + link[b] * nb) / (na + nb)
        blocked[a, :] |= blocked[b, :]
        blocked[:, a] = blocked[a, :]
        merged[blocked[a]] = np.inf
        link[a, :], link[:, a] = merged, merged
        link[a, a] = np.inf
        groups[a] = groups[a] + groups[b]
        groups[b] = []
        active.remove(b)
    return sorted((sorted(g) for g in groups if g), key=lambda g: g[0])


class IdentityBank:
    """Snapshots of one video's face (or voice) nodes: what the memory stores for each, nothing else."""

    def __init__(self, threshold: float, distance: Distance, snapshots: dict[int, np.ndarray] | None = None,
                 linkage: str = "median"):
        if linkage not in ("median", "average"):
            raise ValueError(f"linkage must be 'median' or 'average', not {linkage!r}")
        self.threshold = threshold
        self.distance = distance
        self.linkage = linkage
        self.snapshots: dict[int, np.ndarray] = dict(snapshots or {})

    def gap(self, group: np.ndarray, node_id: int) -> float:
        """How far ``group`` is from a node: the median or the mean of its distances to the node's snapshots."""
        distances = self.distance(group, self.snapshots[node_id])
        return float(np.median(distances) if self.linkage == "median" else distances.mean())

    def match(self, group: np.ndarray, taken: set[int] = frozenset()) -> int | None:
        best, best_d = None, self.threshold
        for node_id in self.snapshots:
            if node_id in taken or not len(self.snapshots[node_id]):
                continue
            d = self.gap(group, node_id)
            if d <= best_d:
                best, best_d = node_id, d
        return best

    def twins(self, threshold: Callable[[int, int], float]) -> list[tuple[int, int]]:
        """``(newer, older)`` node pairs that are one identity: their snapshots are closer than
        ``threshold(a, b)`` (evidence from elsewhere, such as the faces each is seen with, moves it). Closest
        pairs first; a node folded away takes no further part, the one it folded into keeps its own snapshots."""
        nodes = sorted(n for n, snaps in self.snapshots.items() if len(snaps))
        pairs = sorted((self.gap(self.snapshots[a], b), a, b) for i, a in enumerate(nodes) for b in nodes[i + 1:])
        out, gone = [], set()
        for d, a, b in pairs:
            if a in gone or b in gone or d > threshold(a, b):
                continue
            out.append((b, a))  # ids grow with time: the later node folds into the earlier one
            gone.add(b)
        return out

    def fold(self, gone: int, into: int, snapshots: np.ndarray) -> None:
        self.snapshots.pop(gone, None)
        self.keep(into, snapshots)

    def keep(self, node_id: int, snapshots: np.ndarray) -> None:
        """The embeddings the memory keeps for ``node_id``: the writer's snapshot policy chooses them,
        so an uninterrupted run and a resumed one match against the same evidence."""
        self.snapshots[node_id] = np.asarray(snapshots)
