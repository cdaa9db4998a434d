"""RGB frames as JPEG bytes: the face crops memory keeps and the frames a vision model is sent."""

from __future__ import annotations

import io

import numpy as np


def encode_jpeg(image: np.ndarray, quality: int = 85, max_side: int | None = None) -> bytes:
    """``image`` (H x W x 3, uint8 RGB) as JPEG, shrunk to fit ``max_side`` when given (never enlarged)."""
    from PIL import Image

    img = Image.fromarray(image)
    if max_side:
        img.thumbnail((max_side, max_side))
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=quality)
    return buf.getvalue()
