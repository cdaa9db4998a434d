"""Persistent identities: group one clip's faces (or voice segments), then match each group to an
existing face/voice node of the video or mark it new.

Grouping is average-linkage agglomerative clustering under the backend's threshold; matching
compares a group with every snapshot a node keeps and takes the node whose median distance is
smallest and under the threshold, so one odd snapshot can neither make nor break a match.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

Distance = Callable[[np.ndarray, np.ndarray], np.ndarray]


def cosine_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.atleast_2d(a), np.atleast_2d(b)
    a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return 1.0 - a @ b.T


def cluster(embeddings: np.ndarray, threshold: float, distance: Distance) -> list[list[int]]:
    """Average-linkage clusters of rows whose mean pairwise distance stays <= ``threshold``."""
    n = len(embeddings)
    if n == 0:
        return []
    groups = [[i] for i in range(n)]
    d = distance(embeddings, embeddings).astype(np.float64)
    link = d.copy()
    np.fill_diagonal(link, np.inf)
    active = list(range(n))
    while len(active) > 1:
        sub = link[np.ix_(active, active)]
        i, j = np.unravel_index(np.argmin(sub), sub.shape)
        if sub[i, j] > threshold:
            break
        a, b = active[i], active[j]
        na, nb = len(groups[a]), len(groups[b])
        merged = (link[a] * na + link[b] * nb) / (na + nb)
        link[a, :], link[:, a] = merged, merged
        link[a, a] = np.inf
        groups[a] = groups[a] + groups[b]
        groups[b] = []
        active.remove(b)
    return sorted((sorted(g) for g in groups if g), key=lambda g: g[0])


class IdentityBank:
    """Snapshots of one video's face (or voice) nodes: what the memory stores for each, nothing else."""

    def __init__(self, threshold: float, distance: Distance, snapshots: dict[int, np.ndarray] | None = None):
        self.threshold = threshold
        self.distance = distance
        self.snapshots: dict[int, np.ndarray] = dict(snapshots or {})

    def match(self, group: np.ndarray, taken: set[int] = frozenset()) -> int | None:
        best, best_d = None, self.threshold
        for node_id, snaps in self.snapshots.items():
            if node_id in taken:
                continue
            d = float(np.median(self.distance(group, snaps)))
            if d <= best_d:
                best, best_d = node_id, d
        return best

    def keep(self, node_id: int, snapshots: np.ndarray) -> None:
        """The embeddings the memory keeps for ``node_id``: the writer's snapshot policy chooses them,
        so an uninterrupted run and a resumed one match against the same evidence."""
        self.snapshots[node_id] = np.asarray(snapshots)
