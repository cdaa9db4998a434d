"""Face detection that looks again only where a frame changed.

At 1 fps most of a frame is often what it was a second earlier (a fixed camera, a speaker at a desk,
a slide), and full-resolution detection is the costliest step of memorization. Frames are compared
block by block with the previous frame of the clip; detection runs on the part that changed (grown
to hold every face it touches, plus a margin of context, and aligned to the detector's coarsest
stride so its anchors fall where they would on the whole frame) and the faces elsewhere are carried
over unchanged. When most of the frame changed (a cut, a moving camera) the whole frame is searched.
A new ``ChangedRegionLocator`` per clip: every clip starts with a full search, so a clip's faces never
depend on the clip before it (resuming a memorization gives the same faces).
"""

from __future__ import annotations

import numpy as np

from m3agent.perception.blocks import BLOCK, block_change, thumbnail
from m3agent.perception.faces.base import FaceBackend

Box = tuple[int, int, int, int]

MARGIN = 32  # context kept around the changed part, pixels


class ChangedRegionLocator:
    """``locate(frame)`` for consecutive frames of one clip. ``min_change``: mean absolute difference
    (0-255 levels) above which a block counts as changed: well above the re-encoding noise of a still
    picture (under 2 levels), well below what a moving face makes. ``max_share``: above this share of
    the frame changed, the whole frame is searched."""

    def __init__(self, backend: FaceBackend, min_change: float = 6.0, max_share: float = 0.6):
        self.backend, self.min_change, self.max_share = backend, min_change, max_share
        self._previous: np.ndarray | None = None
        self._faces: list[tuple[Box, float]] = []
        self.pixels_searched = 0  # with ``pixels_seen``: the share of pixels the detector looked at
        self.pixels_seen = 0

    def locate(self, frame: np.ndarray) -> list[tuple[Box, float]]:
        h, w = frame.shape[:2]
        sample = thumbnail(frame)
        previous, self._previous = self._previous, sample
        self.pixels_seen += h * w
        region = None if previous is None or previous.shape != sample.shape else self._region(previous, sample, w, h)
        if region is None:
            self._faces = self.backend.locate(frame)
            self.pixels_searched += h * w
            return self._faces
        if region == ():  # nothing moved
            return self._faces
        (x0, y0, x1, y1), inner = region
        scale = self.backend.scale_for(frame.shape)
        found = [((bx0 + x0, by0 + y0, bx1 + x0, by1 + y0), score)
                 for (bx0, by0, bx1, by1), score in self.backend.locate(frame[y0:y1, x0:x1], scale=scale)]
        self.pixels_searched += (x1 - x0) * (y1 - y0)
        self._faces = ([f for f in self._faces if not _centre_in(f[0], inner)]
                       + [f for f in found if _centre_in(f[0], inner)])
        return self._faces

    def _region(self, previous: np.ndarray, sample: np.ndarray, w: int, h: int):
        """``()`` if nothing changed; None if the whole frame must be searched; else the crop to search
        and, inside it, the part whose faces it decides."""
        changed = block_change(previous, sample) > self.min_change
        if not changed.any():
            return ()
        ys, xs = np.flatnonzero(changed.any(axis=1)), np.flatnonzero(changed.any(axis=0))
        inner = (int(xs[0]) * BLOCK, int(ys[0]) * BLOCK, min(w, (int(xs[-1]) + 1) * BLOCK),
                 min(h, (int(ys[-1]) + 1) * BLOCK))
        grown = True
        while grown:  # a face the change touches is searched whole
            grown = False
            for box, _ in self._faces:
                if _overlaps(box, inner) and not _inside(box, inner):
                    inner = (min(inner[0], box[0]), min(inner[1], box[1]), max(inner[2], box[2]), max(inner[3], box[3]))
                    grown = True
        x0 = max(0, (inner[0] - MARGIN) // BLOCK * BLOCK)
        y0 = max(0, (inner[1] - MARGIN) // BLOCK * BLOCK)
        x1, y1 = min(w, -(-(inner[2] + MARGIN) // BLOCK) * BLOCK), min(h, -(-(inner[3] + MARGIN) // BLOCK) * BLOCK)
        if (x1 - x0) * (y1 - y0) > self.max_share * w * h:
            return None
        return (x0, y0, x1, y1), inner


def _centre_in(box: Box, area: Box) -> bool:
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return area[0] <= cx < area[2] and area[1] <= cy < area[3]


def _overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _inside(a: Box, b: Box) -> bool:
    return b[0] <= a[0] and b[1] <= a[1] and a[2] <= b[2] and a[3] <= b[3]
