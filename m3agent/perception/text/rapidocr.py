"""Embedded default text reader: PP-OCRv4 detection and recognition (Chinese and English) with the
upside-down classifier, as ONNX files inside ``rapidocr-onnxruntime==1.4.4`` (Apache-2.0), run by onnxruntime.

The package's own pipeline looks at a 720p frame at full size or larger; here detection looks at the image
scaled down to ``detect_side`` pixels on its long side (captions and signs stay well above the detector's
smallest text; about half the time of full size), and recognition reads each found line from the full-size
pixels. At most ``max_lines`` lines are recognised (the largest), so a frame full of small text costs a
bounded time. The package needs OpenCV; the headless build serves it (its metadata asks for the desktop one,
so it is installed ``--no-deps``, see scripts/setup.sh).
"""

from __future__ import annotations

import numpy as np

from m3agent.models.bundled import ModelNotFoundError
from m3agent.perception.text.base import TextBackend, TextBox

DISTRIBUTION = "--no-deps rapidocr-onnxruntime==1.4.4 (with opencv-python-headless, pyclipper, shapely)"


class RapidOCRBackend(TextBackend):
    name = "rapidocr"

    @classmethod
    def from_config(cls, config) -> RapidOCRBackend:
        return cls(min_score=config.text_min_score, max_lines=config.text_max_lines,
                   detect_side=config.text_detect_side)

    def __init__(self, min_score: float = 0.8, max_lines: int = 24, detect_side: int = 736, threads: int = 1,
                 upside_down: bool = True):
        try:
            from rapidocr_onnxruntime import RapidOCR
        except ImportError as exc:
            raise ModelNotFoundError(f"on-screen text reader missing: pip install {DISTRIBUTION} ({exc})") from exc
        # detection is told not to resize (min side 32: every frame is larger); ``read`` scales frames itself
        self._engine = RapidOCR(det_limit_type="min", det_limit_side_len=32, intra_op_num_threads=threads,
                                inter_op_num_threads=1)
        self.min_score, self.max_lines, self.detect_side = min_score, max_lines, detect_side
        self.upside_down = upside_down

    def read(self, image: np.ndarray) -> list[TextBox]:
        if image.ndim != 3 or min(image.shape[:2]) < 16:
            return []
        import cv2

        bgr = np.ascontiguousarray(image[:, :, ::-1])
        h, w = bgr.shape[:2]
        scale = min(1.0, self.detect_side / max(h, w))
        small = cv2.resize(bgr, (round(w * scale), round(h * scale)), interpolation=cv2.INTER_AREA) if scale < 1 else bgr
        boxes, _ = self._engine.text_det(small)
        if boxes is None or len(boxes) == 0:
            return []
        boxes = np.asarray(boxes, np.float32) / scale
        area = [(b[:, 0].max() - b[:, 0].min()) * (b[:, 1].max() - b[:, 1].min()) for b in boxes]
        keep = sorted(np.argsort(area)[::-1][: self.max_lines])
        boxes = self._engine.sorted_boxes(boxes[keep])
        crops = self._engine.get_crop_img_list(bgr, boxes)
        if self.upside_down:
            crops, _, _ = self._engine.text_cls(crops)
        read, _ = self._engine.text_rec(crops)
        out = []
        for quad, (text, score) in zip(boxes, read):
            text = " ".join(str(text).split())
            if text and float(score) >= self.min_score:
                out.append(TextBox(text, (int(quad[:, 0].min()), int(quad[:, 1].min()), int(np.ceil(quad[:, 0].max())),
                                          int(np.ceil(quad[:, 1].max()))), float(score)))
        return out
