"""The face-backend contract: detect faces in RGB frames and embed each one."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from m3agent.perception.identity import euclidean_distance


@dataclass
class FaceDetection:
    frame_index: int
    time: float
    box: tuple[int, int, int, int]  # left, top, right, bottom (pixels)
    score: float  # detector confidence
    embedding: np.ndarray
    crop: np.ndarray  # RGB uint8
    sharpness: float = 0.0

    @property
    def size(self) -> int:
        left, top, right, bottom = self.box
        return min(right - left, bottom - top)


class FaceBackend(ABC):
    """Finds faces and embeds them. ``same_person_distance`` is the largest embedding distance
    (see ``distance``) at which two faces are taken for one person."""

    name: str
    dim: int
    same_person_distance: float
    metric: str = "euclidean"  # what ``distance`` measures ("euclidean" or "cosine"): memory keeps it to check nodes
    max_side: int = 0  # frames are looked at no larger than this (0: as they are)
    # what ``locate`` and ``embed`` give depends only on the pixels near a face: a crop looked at with the
    # whole frame's scale finds what the whole frame would there (frames that changed only in part are
    # searched only there), and the same pixels around a box give the same embedding (it is reused)
    local: bool = False
    concurrency: int = 1  # how many ``locate`` calls may run at once (two clips' faces are then searched at once)

    @classmethod
    def from_config(cls, config) -> FaceBackend:
        """Build from :class:`m3agent.config.PerceptionConfig`; a zero setting keeps the backend's own
        default (detector scores and useful scales differ from one detector to the next)."""
        given = {"min_score": config.face_min_score, "min_size": config.face_min_size,
                 "max_side": config.face_max_side}
        return cls(**{key: value for key, value in given.items() if value})

    @abstractmethod
    def locate(self, frame: np.ndarray, scale: float | None = None) -> list[tuple[tuple[int, int, int, int], float]]:
        """Face boxes ``(left, top, right, bottom)`` with detector scores, filtered by score and size.
        ``scale``: look at ``frame`` resized by this factor (default: ``scale_for(frame.shape)``)."""

    def scale_for(self, shape: tuple[int, ...]) -> float:
        """The factor a frame of ``shape`` is resized by before detection: down to ``max_side``, never up."""
        return min(1.0, self.max_side / max(shape[:2])) if self.max_side else 1.0

    @abstractmethod
    def embed(self, frame: np.ndarray, box: tuple[int, int, int, int]) -> np.ndarray:
        """The identity embedding of the face in ``box``."""

    def detection(self, frame: np.ndarray, box, score: float, frame_index: int, time: float,
                  embedding: np.ndarray | None) -> FaceDetection:
        left, top, right, bottom = box
        gray = frame[top:bottom, left:right].mean(axis=2) if bottom > top and right > left else np.zeros((1, 1))
        emb = embedding if embedding is not None else np.zeros(0, np.float32)
        return FaceDetection(frame_index, time, box, float(score), emb, crop_box(frame, box), sharpness(gray))

    def detect(self, frame: np.ndarray, frame_index: int = 0, time: float = 0.0) -> list[FaceDetection]:
        """Locate and embed every face of one frame."""
        return [self.detection(frame, box, score, frame_index, time, self.embed(frame, box))
                for box, score in self.locate(frame)]

    def distance(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Pairwise distances between rows of ``a`` and ``b`` (Euclidean unless overridden)."""
        return euclidean_distance(a, b)


def resized(frame: np.ndarray, scale: float) -> np.ndarray:
    """``frame`` as contiguous uint8, resized by ``scale`` (bilinear) unless that is 1."""
    frame = np.ascontiguousarray(frame, dtype=np.uint8)
    if scale == 1.0:
        return frame
    from PIL import Image

    h, w = frame.shape[:2]
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    return np.asarray(Image.fromarray(frame).resize(size, Image.BILINEAR))


def sharpness(gray: np.ndarray) -> float:
    """Variance of a discrete Laplacian: low for blurred faces."""
    g = gray.astype(np.float32)
    if min(g.shape) < 3:
        return 0.0
    lap = -4 * g[1:-1, 1:-1] + g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:]
    return float(lap.var())


def iou(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> float:
    """Intersection over union of two ``(left, top, right, bottom)`` boxes."""
    ix = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def crop_box(frame: np.ndarray, box: tuple[int, int, int, int], margin: float = 0.25) -> np.ndarray:
    left, top, right, bottom = box
    h, w = frame.shape[:2]
    mx, my = int((right - left) * margin), int((bottom - top) * margin)
    return frame[max(0, top - my) : min(h, bottom + my), max(0, left - mx) : min(w, right + mx)].copy()
