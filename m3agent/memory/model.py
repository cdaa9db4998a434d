"""Plain records the memory graph is made of."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum


class NodeKind(IntEnum):
    FACE = 0
    VOICE = 1
    EPISODIC = 2
    SEMANTIC = 3

    @property
    def label(self) -> str:
        return self.name.lower()


# Tag kind used in text for each entity node kind.
TAG_OF_KIND = {NodeKind.FACE: "face", NodeKind.VOICE: "voice"}


@dataclass(frozen=True)
class Video:
    id: int
    name: str
    path: str | None
    duration: float | None
    clip_seconds: float


@dataclass(frozen=True)
class Clip:
    video_id: int
    id: int
    start: float
    end: float


@dataclass
class TextNode:
    id: int
    video_id: int
    kind: NodeKind
    clip: int
    text: str
    weight: float = 1.0
    valid_from: int | None = None
    invalidated_by: int | None = None
    entities: list[int] = field(default_factory=list)
    invalidated_at: int | None = None  # clip at which invalidated_by took effect


@dataclass(frozen=True)
class VoiceSegment:
    clip: int
    start: float
    end: float
    text: str
