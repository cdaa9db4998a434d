"""How much each block of a frame changed since the previous frame: the one measure behind face search
in changed regions (:mod:`m3agent.perception.faces.changes`) and shot cuts and text regions
(:mod:`m3agent.perception.shots`). Every fourth pixel of each 32-pixel block, both ways, is compared, so a
1280x720 frame costs a 320x180 difference."""

from __future__ import annotations

import numpy as np

BLOCK = 32  # pixels a side; also RetinaFace's coarsest stride
SAMPLE = 4  # every fourth pixel of each block, both ways, is compared (64 a block)


def thumbnail(frame: np.ndarray) -> np.ndarray:
    """The sampled R+G+B of ``frame`` that :func:`block_change` compares."""
    return frame[::SAMPLE, ::SAMPLE].sum(axis=2, dtype=np.int16)


def block_change(previous: np.ndarray, current: np.ndarray) -> np.ndarray:
    """Mean absolute difference per block (0-255 levels), ``rows x cols`` blocks; the thumbnails must match."""
    step = BLOCK // SAMPLE
    diff = np.abs(current - previous) / 3.0
    rows, cols = -(-diff.shape[0] // step), -(-diff.shape[1] // step)
    padded = np.zeros((rows * step, cols * step), np.float32)
    padded[: diff.shape[0], : diff.shape[1]] = diff
    return padded.reshape(rows, step, cols, step).mean(axis=(1, 3))
