"""Plain records the memory graph is made of."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum


class NodeKind(IntEnum):
    FACE = 0
    VOICE = 1
    EPISODIC = 2
    SEMANTIC = 3
    PROCEDURAL = 4  # what worked and what a user corrected: kept apart from what happened (declarative)
    SPEAKER = 5  # a named speaker of text records (conversations carry names, not faces or voices)

    @property
    def label(self) -> str:
        return self.name.lower()


#: what happened and what is known: the lines a memory search returns unless asked for procedures
DECLARATIVE_KINDS = (NodeKind.EPISODIC, NodeKind.SEMANTIC)
TEXT_KINDS = (*DECLARATIVE_KINDS, NodeKind.PROCEDURAL)
ENTITY_KINDS = (NodeKind.FACE, NodeKind.VOICE, NodeKind.SPEAKER)


def sql_kinds(kinds) -> str:
    """``(2, 3)``: an SQL list of node kinds, for ``kind IN ...`` (ints only, never user text)."""
    return "(" + ", ".join(str(int(k)) for k in kinds) + ")"


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
