"""Shots, key frames and the regions of a frame that changed, from the frames a clip already decoded.

A cut is a frame most of whose blocks changed (:mod:`m3agent.perception.blocks`) *and* whose colours
changed: a camera moving through one room changes every block but keeps its colours, so it stays one
shot; a missed cut between two rooms of the same colours costs only a key frame. Each shot's first frame
is a key frame: what on-screen text reading and a served vision model look at. Inside a shot, a region that
changed and then stayed still (a caption, a slide's next bullet, a sign coming into view) is worth reading
too; a region that changes every frame (a talking face) is not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from m3agent.perception.blocks import BLOCK, block_change, thumbnail

Box = tuple[int, int, int, int]  # left, top, right, bottom (pixels)

MIN_CHANGE = 6.0  # mean levels per block above which a block changed (re-encoding noise stays under 2)
CUT_SHARE = 0.5  # a cut changes at least this share of the blocks ...
CUT_COLOURS = 0.25  # ... and moves at least this share of the colour histogram


@dataclass(frozen=True)
class Shot:
    first: int  # frame indices of the clip, inclusive
    last: int
    start: float  # video time of its first and last frames
    end: float


@dataclass(frozen=True)
class SettledRegion:
    """Blocks side by side that changed at ``frame`` and did not change again at the next frame."""

    frame: int
    box: Box
    blocks: int


@dataclass
class FrameMotion:
    """Per frame of one clip: which blocks changed since the frame before (None for the first frame, and for a
    frame whose size differs from the one before), and the clip's shots."""

    changed: list[np.ndarray | None]
    shots: list[Shot]

    def touched(self, frame: int, box: Box) -> bool:
        """Whether any block under ``box`` changed at ``frame`` (a first frame of a shot counts as changed)."""
        mask = self.changed[frame]
        if mask is None or any(s.first == frame for s in self.shots):
            return True
        x0, y0, x1, y1 = box
        return bool(mask[y0 // BLOCK : -(-y1 // BLOCK), x0 // BLOCK : -(-x1 // BLOCK)].any())

    def shot_of(self, frame: int) -> Shot:
        return next(s for s in self.shots if s.first <= frame <= s.last)

    def settled_regions(self, min_blocks: int = 2, margin: int = BLOCK) -> list[SettledRegion]:
        """Regions that changed inside a shot and then held still for a frame (or the clip ended), largest
        first: one per connected group of such blocks (a block that changes again next frame is no part of one,
        so a caption beside a talking face settles on its own), grown by ``margin`` pixels."""
        from scipy.ndimage import find_objects, label

        cuts = {s.first for s in self.shots}
        out = []
        for i, mask in enumerate(self.changed):
            if mask is None or i in cuts or not mask.any():
                continue
            after = self.changed[i + 1] if i + 1 < len(self.changed) and i + 1 not in cuts else None
            settled = mask & ~after if after is not None and after.shape == mask.shape else mask
            groups, _ = label(settled)
            for index, where in enumerate(find_objects(groups), start=1):
                size = int((groups[where] == index).sum())
                if size < min_blocks:
                    continue
                ys, xs = where
                box = (max(0, xs.start * BLOCK - margin), max(0, ys.start * BLOCK - margin),
                       xs.stop * BLOCK + margin, ys.stop * BLOCK + margin)
                out.append(SettledRegion(i, box, size))
        return sorted(out, key=lambda r: (-r.blocks, r.frame))


def _colours(frame: np.ndarray, bins: int = 16) -> np.ndarray:
    """A normalised histogram of each channel, from every fourth pixel."""
    sample = frame[::4, ::4].reshape(-1, frame.shape[2])
    hist = np.concatenate([np.bincount(sample[:, c] // (256 // bins), minlength=bins) for c in range(3)])
    return hist / max(1, sample.shape[0] * 3)


def frame_motion(frames: list[np.ndarray], times: list[float], min_change: float = MIN_CHANGE,
                 cut_share: float = CUT_SHARE, cut_colours: float = CUT_COLOURS) -> FrameMotion:
    changed: list[np.ndarray | None] = []
    firsts = [0] if frames else []
    previous = previous_colours = None
    for i, frame in enumerate(frames):
        sample, colours = thumbnail(frame), _colours(frame)
        if previous is None or previous.shape != sample.shape:
            changed.append(None)
            if i:
                firsts.append(i)
        else:
            mask = block_change(previous, sample) > min_change
            changed.append(mask)
            if mask.mean() >= cut_share and float(np.abs(colours - previous_colours).sum()) / 2 >= cut_colours:
                firsts.append(i)
        previous, previous_colours = sample, colours
    bounds = firsts + [len(frames)]
    shots = [Shot(a, b - 1, times[a], times[b - 1]) for a, b in zip(bounds, bounds[1:])]
    return FrameMotion(changed, shots)


def key_frames(shots: list[Shot], most: int) -> list[int]:
    """The first frame of each shot; with more shots than ``most``, those of the longest shots (in order)."""
    chosen = sorted(shots, key=lambda s: (-(s.last - s.first), s.first))[: max(0, most)]
    return sorted(s.first for s in chosen)
