"""dlib's HOG detector and ResNet face descriptor (128-d), weights from the ``face-recognition-models``
package (``face_backend=dlib``; the default detector is RetinaFace, which embeds with this descriptor).
Same person: L2 0.07-0.4; different people: >= 0.63."""

from __future__ import annotations

import numpy as np

from m3agent.models.bundled import bundled_dir
from m3agent.perception.faces.base import FaceBackend, resized


class DlibEncoder:
    """dlib's 5-point landmarks and ResNet descriptor (128-d) for a face box: the identity half of the
    dlib backend, shared with detectors whose boxes are first made like dlib's (see ``retinaface``)."""

    def __init__(self):
        import dlib

        models = bundled_dir("face_recognition_models", "models", "face-recognition-models==0.3.0")
        self._shape = dlib.shape_predictor(str(models / "shape_predictor_5_face_landmarks.dat"))
        self._encoder = dlib.face_recognition_model_v1(str(models / "dlib_face_recognition_resnet_model_v1.dat"))

    def __call__(self, frame: np.ndarray, box: tuple[int, int, int, int]) -> np.ndarray:
        import dlib

        # landmarks and descriptor on a padded crop: converting the whole frame costs more than the net
        left, top, right, bottom = box
        h, w = frame.shape[:2]
        pad = (right - left) // 2
        x0, y0 = max(0, left - pad), max(0, top - pad)
        region = np.ascontiguousarray(frame[y0 : min(h, bottom + pad), x0 : min(w, right + pad)], dtype=np.uint8)
        shape = self._shape(region, dlib.rectangle(left - x0, top - y0, right - x0, bottom - y0))
        return np.asarray(self._encoder.compute_face_descriptor(region, shape, 0), dtype=np.float32)


class DlibFaceBackend(FaceBackend):
    name = "dlib"
    dim = 128
    local = True
    same_person_distance = 0.55  # dlib: same person 0.07-0.52 on the shared photos, others >= 0.63

    def __init__(self, min_score: float = 0.5, upsample: int = 0, min_size: int = 40, max_side: int = 960):
        import dlib

        self._detector = dlib.get_frontal_face_detector()
        self._encode = DlibEncoder()
        self.min_score, self.upsample, self.min_size, self.max_side = min_score, upsample, min_size, max_side

    def locate(self, frame: np.ndarray, scale: float | None = None) -> list[tuple[tuple[int, int, int, int], float]]:
        h, w = frame.shape[:2]
        scale = self.scale_for(frame.shape) if scale is None else scale
        small = resized(frame, scale)
        rects, scores, _ = self._detector.run(small, self.upsample, 0.0)
        out = []
        for rect, score in zip(rects, scores):
            if score < self.min_score:
                continue
            left, top, right, bottom = (int(round(v / scale)) for v in (rect.left(), rect.top(), rect.right(),
                                                                          rect.bottom()))
            box = (max(0, left), max(0, top), min(w, right), min(h, bottom))
            if min(box[2] - box[0], box[3] - box[1]) >= self.min_size:
                out.append((box, float(score)))
        return out

    def embed(self, frame: np.ndarray, box: tuple[int, int, int, int]) -> np.ndarray:
        return self._encode(frame, box)
