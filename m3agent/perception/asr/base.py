"""The speech-recognition contract: timestamped segments of one clip's audio."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Segment:
    start: float  # seconds from the start of the audio given
    end: float
    text: str


class ASRBackend(ABC):
    name: str
    concurrency: int = 1  # how many ``transcribe`` calls may run at once (from different threads)

    @classmethod
    def from_config(cls, config) -> ASRBackend:
        """Build from :class:`m3agent.config.PerceptionConfig`."""
        return cls(**cls.settings(config))

    @classmethod
    def settings(cls, config) -> dict:
        """The constructor's arguments from the config; a backend with more settings adds its own."""
        return {"model": config.asr_model, "device": config.device, "language": config.asr_language or None}

    @abstractmethod
    def transcribe(self, audio: np.ndarray, sample_rate: int = 16_000) -> list[Segment]: ...

    def transcribe_many(self, audios: list[np.ndarray], sample_rate: int = 16_000) -> list[list[Segment]]:
        """The segments of each audio (times from its own start). A backend that can recognise several at
        once (one model pass over the speech of two clips) does so; the default takes them one by one."""
        return [self.transcribe(audio, sample_rate) for audio in audios]
