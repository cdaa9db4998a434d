"""Production faces: insightface ``buffalo_l`` (RetinaFace + ArcFace, 512-d) from a local model
directory. Needs ``pip install m3agent[gpu]`` (insightface, onnxruntime) and the model files:
nothing is downloaded. Distances are cosine distances (1 - cos)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from m3agent.models.bundled import ModelNotFoundError
from m3agent.perception.faces.base import FaceBackend, iou


class InsightFaceBackend(FaceBackend):
    name = "insightface"
    dim = 512
    metric = "cosine"
    same_person_distance = 0.6  # cosine distance; ArcFace same person typically cos > 0.4

    def __init__(self, model_dir: str, model_name: str = "buffalo_l", min_score: float = 0.5,
                 min_size: int = 40, ctx_id: int = -1, det_size: int = 640):
        root = Path(model_dir).expanduser()
        if not model_dir or (not (root / "models" / model_name).is_dir() and not (root / model_name).is_dir()):
            raise ModelNotFoundError(
                f"insightface model {model_name!r} not found under {root} (expected {root}/models/{model_name}; "
                "set memorize.perception.face_model_dir)"
            )
        try:
            from insightface.app import FaceAnalysis
        except ImportError as exc:
            raise ModelNotFoundError("insightface is not installed: pip install 'm3agent[gpu]'") from exc
        base = root if (root / "models" / model_name).is_dir() else root.parent
        self._app = FaceAnalysis(name=model_name, root=str(base), allowed_modules=["detection", "recognition"])
        self._app.prepare(ctx_id=ctx_id, det_size=(det_size, det_size))
        self.min_score, self.min_size = min_score, min_size

    @classmethod
    def from_config(cls, config) -> InsightFaceBackend:
        device = config.device
        ctx_id = int(device.partition(":")[2] or 0) if device.startswith("cuda") else -1
        return cls(config.face_model_dir, min_score=config.face_min_score or 0.5,
                   min_size=config.face_min_size or 40, ctx_id=ctx_id)

    def distance(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = np.atleast_2d(a), np.atleast_2d(b)
        a = a / np.linalg.norm(a, axis=1, keepdims=True)
        b = b / np.linalg.norm(b, axis=1, keepdims=True)
        return 1.0 - a @ b.T

    def _faces(self, frame: np.ndarray):
        key = (id(frame), frame.shape)
        if getattr(self, "_cache_key", None) != key:  # one detector+recognizer pass serves both calls
            self._cache_key, self._cache = key, self._app.get(np.ascontiguousarray(frame[:, :, ::-1]))
        return self._cache

    def locate(self, frame: np.ndarray, scale: float | None = None) -> list[tuple[tuple[int, int, int, int], float]]:
        out = []  # buffalo_l resizes to its own det_size; ``scale`` is not used
        for face in self._faces(frame):
            box = tuple(int(v) for v in face.bbox)
            if face.det_score >= self.min_score and min(box[2] - box[0], box[3] - box[1]) >= self.min_size:
                out.append((box, float(face.det_score)))
        return out

    def embed(self, frame: np.ndarray, box: tuple[int, int, int, int]) -> np.ndarray:
        faces = self._faces(frame)
        if not faces:
            raise ValueError("no face at the given box")
        best = max(faces, key=lambda f: iou(tuple(int(v) for v in f.bbox), box))
        return np.asarray(best.normed_embedding, np.float32)

