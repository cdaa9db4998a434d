"""The speaker-embedding contract: a unit vector per speech segment, cosine = similarity."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np


class VoiceBackend(ABC):
    name: str
    dim: int
    same_speaker_cosine: float  # a segment (or group) and a voice node whose mean cosine reaches this are one speaker
    pair_cosine: float = 0.0  # two single segments of one clip group only from this (0: same_speaker_cosine)

    @classmethod
    def from_config(cls, config) -> VoiceBackend:
        """Build from :class:`m3agent.config.PerceptionConfig`."""
        return cls(device=config.device)

    @abstractmethod
    def embed(self, audio: np.ndarray, sample_rate: int = 16_000) -> np.ndarray:
        """Unit-norm embedding of one segment of mono float32 audio."""
