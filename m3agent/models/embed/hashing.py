"""A dependency-free bag-of-words embedder (feature hashing).

Useful where no neural model can load (a minimal install) and for fast tests of search logic:
texts sharing words are similar, texts sharing none are orthogonal.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence

import numpy as np

from m3agent.models.embed.base import TextEmbedder, normalize_rows

_TOKEN = re.compile(r"<[a-z]+_\d+>|\w+", re.UNICODE)


class HashingEmbedder(TextEmbedder):
    def __init__(self, dim: int = 256):
        self.dim = dim
        self.name = f"hashing-{dim}"

    @classmethod
    def from_config(cls, config) -> HashingEmbedder:
        return cls(dim=int(config.model or 256))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in _TOKEN.findall(text.lower()):
                h = zlib.crc32(token.encode("utf-8"))
                out[row, h % self.dim] += 1.0 if (h >> 31) == 0 else -1.0
        return normalize_rows(out)
