"""The on-screen text contract: the lines of text in an RGB image, with where they are."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TextBox:
    text: str
    box: tuple[int, int, int, int]  # left, top, right, bottom (pixels of the image read)
    score: float  # the recogniser's confidence, 0-1


class TextBackend(ABC):
    """Reads text. ``read`` looks for text in the whole image it is given (a frame, or a crop of one) and
    gives at most ``max_lines`` lines, the largest, so that a frame full of text costs a bounded time."""

    name: str

    @classmethod
    def from_config(cls, config) -> TextBackend:
        """Build from :class:`m3agent.config.PerceptionConfig`."""
        return cls(min_score=config.text_min_score, max_lines=config.text_max_lines)

    @abstractmethod
    def read(self, image: np.ndarray) -> list[TextBox]:
        """Lines of text in ``image`` (RGB uint8), in reading order."""
