"""Backends found by name and imported on first use, so heavy optional packages stay optional.

Each kind of backend (``embedder``, ``vector_index``, ...) maps a short name to a ``"module:Class"``
path. Users add their own with :func:`register` (or by passing a dotted path as the name).
"""

from __future__ import annotations

import importlib
from typing import Any

from m3agent.errors import M3AgentError

_BACKENDS: dict[str, dict[str, str]] = {
    "embedder": {
        "sentence-transformers": "m3agent.models.embed.sentence_transformers:SentenceTransformerEmbedder",
        "hashing": "m3agent.models.embed.hashing:HashingEmbedder",
    },
    "face": {
        "dlib": "m3agent.perception.faces.dlib:DlibFaceBackend",
        "insightface": "m3agent.perception.faces.insightface:InsightFaceBackend",
    },
    "voice": {"resemblyzer": "m3agent.perception.voices.resemblyzer:ResemblyzerVoiceBackend"},
    "asr": {"faster-whisper": "m3agent.perception.asr.faster_whisper:FasterWhisperASR"},
    "memorizer": {
        "grounded": "m3agent.memorizers.grounded:GroundedMemorizer",
        "chat": "m3agent.memorizers.chat:ChatMemorizer",
    },
    "chat": {
        "openai": "m3agent.models.llm.openai:OpenAIChat",
        "vllm": "m3agent.models.llm.vllm:VLLMChat",
        "transformers": "m3agent.models.llm.transformers:TransformersChat",
        "llamacpp": "m3agent.models.llm.llamacpp:LlamaCppChat",
        "scripted": "m3agent.models.llm.scripted:ScriptedChat",
    },
    "vector_index": {
        "flat": "m3agent.memory.index.flat:FlatIndex",
        "ivf": "m3agent.memory.index.ivf:IVFIndex",
    },
}


class UnknownBackendError(M3AgentError, KeyError):
    """Raised for a backend name that is neither registered nor an importable ``module:Class``."""


def register(kind: str, name: str, target: str) -> None:
    """Register ``target`` (``"package.module:Class"``) as backend ``name`` of ``kind``."""
    if ":" not in target:
        raise ValueError(f"backend target must look like 'module:Class', got {target!r}")
    _BACKENDS.setdefault(kind, {})[name] = target


def available(kind: str) -> list[str]:
    return sorted(_BACKENDS.get(kind, {}))


def load_class(kind: str, name: str) -> type:
    """Import and return the class registered as ``name`` (or the dotted ``module:Class`` itself)."""
    target = _BACKENDS.get(kind, {}).get(name)
    if target is None:
        if ":" not in name:
            raise UnknownBackendError(
                f"unknown {kind} backend {name!r}; known: {', '.join(available(kind)) or 'none'}"
            )
        target = name
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    try:
        return getattr(module, attr)
    except AttributeError as exc:  # pragma: no cover - a broken registration
        raise UnknownBackendError(f"{target!r} has no attribute {attr!r}") from exc


def create(kind: str, name: str, **kwargs: Any) -> Any:
    """Build backend ``name`` of ``kind`` with ``kwargs``."""
    return load_class(kind, name)(**kwargs)
