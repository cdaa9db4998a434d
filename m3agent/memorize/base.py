"""The memorizer contract: one perceived clip in, episodic and semantic memory lines out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from m3agent.perception.pipeline import ClipPerception


@dataclass
class MemoryLines:
    episodic: list[str] = field(default_factory=list)
    semantic: list[str] = field(default_factory=list)


class Memorizer(ABC):
    """Describes a perceived clip. ``faces[i]``/``voices[i]`` of the perception are already
    resolved to the node ids in ``face_ids``/``voice_ids``; lines tag them ``<face_N>``/``<voice_N>``."""

    name: str
    #: objects the factory must pass to :meth:`from_config` (e.g. ``("chat",)``)
    requires: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, config, **deps) -> Memorizer:
        """Build from :class:`m3agent.config.MemorizeConfig` and the objects named in ``requires``."""
        return cls(**deps)

    @abstractmethod
    def describe(self, perception: ClipPerception, face_ids: list[int], voice_ids: list[int]) -> MemoryLines: ...
