"""Backends found by name and imported on first use, so heavy optional packages stay optional.

Each kind of backend maps a short name to a ``"module:Class"`` path. Every backend class builds itself
the same way, ``Class.from_config(section, **deps)``: ``section`` is its kind's part of the config tree
(the factory picks it: ``memory.*`` for an embedder, ``memorize.perception`` for faces, ...) and ``deps`` are objects other backends provide (the chat memorizer's chat
model). The registry only finds the classes; :mod:`m3agent.factory` builds them. Users add their own with
:func:`register`, or name a ``module:Class`` directly in the config.
"""

from __future__ import annotations

import importlib

from m3agent.errors import M3AgentError

_BACKENDS: dict[str, dict[str, str]] = {
    "embedder": {
        "sentence-transformers": "m3agent.models.embed.sentence_transformers:SentenceTransformerEmbedder",
        "hashing": "m3agent.models.embed.hashing:HashingEmbedder",
    },
    "face": {
        "retinaface": "m3agent.perception.faces.retinaface:RetinaFaceBackend",
        "dlib": "m3agent.perception.faces.dlib:DlibFaceBackend",
        "insightface": "m3agent.perception.faces.insightface:InsightFaceBackend",
    },
    "voice": {
        "campp": "m3agent.perception.voices.campp:CamppVoiceBackend",
        "resemblyzer": "m3agent.perception.voices.resemblyzer:ResemblyzerVoiceBackend",
    },
    "asr": {"faster-whisper": "m3agent.perception.asr.faster_whisper:FasterWhisperASR"},
    "text": {"rapidocr": "m3agent.perception.text.rapidocr:RapidOCRBackend"},
    "memorizer": {
        "grounded": "m3agent.memorize.grounded:GroundedMemorizer",
        "chat": "m3agent.memorize.chat:ChatMemorizer",
    },
    "chat": {
        "openai": "m3agent.models.llm.openai:OpenAIChat",
        "vllm": "m3agent.models.llm.vllm:VLLMChat",
        "transformers": "m3agent.models.llm.transformers:TransformersChat",
        "llamacpp": "m3agent.models.llm.llamacpp:LlamaCppChat",
        "scripted": "m3agent.models.llm.scripted:ScriptedChat",
    },
    "judge": {
        "offline": "m3agent.eval.judge:OfflineJudge",
        "chat": "m3agent.eval.judge:ChatJudge",
    },
    "env": {
        "control": "m3agent.envs.control:ControlEnv",
        "memory-build": "m3agent.envs.memory_build:MemoryBuildEnv",
    },
}

#: names that stand for a registered backend chosen at run time (see m3agent.factory)
ALIASES = {"chat": ("auto",)}


class UnknownBackendError(M3AgentError, KeyError):
    """A backend name that is neither registered nor an importable ``module:Class``."""

    def __str__(self) -> str:  # KeyError would print the message quoted
        return str(self.args[0]) if self.args else ""


class DuplicateBackendError(M3AgentError, ValueError):
    """A second registration under a name that is taken."""


def register(kind: str, name: str, target: str) -> None:
    """Register ``target`` (``"package.module:Class"``) as backend ``name`` of ``kind``."""
    if ":" not in target:
        raise ValueError(f"backend target must look like 'module:Class', got {target!r}")
    taken = _BACKENDS.setdefault(kind, {})
    if name in taken or name in ALIASES.get(kind, ()):
        raise DuplicateBackendError(f"{kind} backend {name!r} is already registered ({taken.get(name, 'alias')})")
    taken[name] = target


def available(kind: str) -> list[str]:
    return sorted(_BACKENDS.get(kind, {}))


def check_name(kind: str, name: str, setting: str) -> None:
    """Fail now, naming the setting, if ``name`` cannot be a ``kind`` backend (no import happens)."""
    if name in _BACKENDS.get(kind, {}) or name in ALIASES.get(kind, ()) or ":" in name:
        return
    known = ", ".join(available(kind) + list(ALIASES.get(kind, ()))) or "none"
    raise UnknownBackendError(f"{setting}: unknown {kind} backend {name!r}; known: {known}")


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
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UnknownBackendError(f"{kind} backend {name!r}: cannot import {module_name}: {exc}") from exc
    try:
        return getattr(module, attr)
    except AttributeError as exc:
        raise UnknownBackendError(f"{target!r} has no attribute {attr!r}") from exc
