"""The one composition root: configuration in, ready objects out.

The CLI, the jobs (qa, batch, demo, the benchmarks), the app's workspace and the training scripts build
everything here, so an object is assembled from config in exactly one way: a memory DB is opened only by
:func:`open_memory` (with the user's ``memory`` settings) and a controller built only by
:func:`build_controller`. Backends come from the registry, each built with ``from_config(section, **deps)``;
a backend that needs another object names it in ``requires`` and gets it from here.

It may import any room of the package, and nothing imports it but what composes: the training data, the
jobs, the CLI and the workspace (the room order is checked by ``tests/test_imports.py``).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from m3agent import registry
from m3agent.config import (
    ChatConfig,
    Config,
    ControlConfig,
    EmbedderConfig,
    JudgeConfig,
    MemorizeConfig,
    PerceptionConfig,
    RewardConfig,
)

if TYPE_CHECKING:
    from m3agent.control import Controller
    from m3agent.envs import Env
    from m3agent.eval.judge import Judge
    from m3agent.eval.rewards import Rewarder
    from m3agent.memorize.base import Memorizer
    from m3agent.memory.graph import MemoryGraph
    from m3agent.models.embed.base import TextEmbedder
    from m3agent.models.llm.base import ChatModel
    from m3agent.perception.pipeline import Perceiver


def _build(kind: str, name: str, section: Any, providers: dict[str, Callable[[], Any]] | None = None) -> Any:
    cls = registry.load_class(kind, name)
    deps = {need: (providers or {})[need]() for need in getattr(cls, "requires", ())}
    return cls.from_config(section, **deps)


def build_embedder(config: EmbedderConfig) -> TextEmbedder:
    return _build("embedder", config.backend, config)


def chat_backend(name: str) -> str:
    """``auto`` (or empty) is the embedded default: llama-cpp-python when installed, else transformers."""
    if name in ("", "auto"):
        return "llamacpp" if importlib.util.find_spec("llama_cpp") is not None else "transformers"
    return name


def build_chat(config: ChatConfig) -> ChatModel:
    return _build("chat", chat_backend(config.backend), config)


def build_face(config: PerceptionConfig) -> Any:
    """The face backend ``config.face_backend`` names."""
    return _build("face", config.face_backend, config)


def build_asr(config: PerceptionConfig) -> Any:
    """The speech-recognition backend ``config.asr_backend`` names; None when it names none."""
    return _build("asr", config.asr_backend, config) if config.asr_backend else None


def build_perceiver(config: PerceptionConfig) -> Perceiver:
    from m3agent.perception.pipeline import Perceiver

    faces = build_face(config)
    voices = _build("voice", config.voice_backend, config) if config.voice_backend else None
    asr = build_asr(config)
    text = _build("text", config.text_backend, config) if config.text_backend else None
    return Perceiver(faces, voices, asr, config, text)


def build_memorizer(config: MemorizeConfig) -> Memorizer:
    return _build("memorizer", config.memorizer, config, {"chat": lambda: build_chat(config.chat)})


def memorization_stack(config: Config) -> tuple[Perceiver, Memorizer, TextEmbedder]:
    """Everything memorizing a video needs, loaded once and reused for every video of a process."""
    return build_perceiver(config.memorize.perception), build_memorizer(config.memorize), build_embedder(config.embedder)


def embedder_for_db(config: EmbedderConfig) -> Callable[[dict[str, str]], TextEmbedder]:
    """Builds, when first needed, the embedder a DB records it was written with; the configured one
    when the user set one (a mismatch is then reported, never mixed)."""

    def factory(meta: dict[str, str]) -> TextEmbedder:
        cfg = config
        recorded, backend = meta.get("embedder"), meta.get("embedder_backend")
        if recorded and backend and cfg == EmbedderConfig():
            model = recorded.removeprefix("hashing-") if backend == "hashing" else recorded
            cfg = dataclasses.replace(cfg, backend=backend, model=model)
        return build_embedder(cfg)

    return factory


class SharedEmbedders:
    """Text embedders for many memories, each built once: DBs written with the same embedder (model, backend,
    size) share one instance of it, so a process that opens many memories loads each model once. Safe to use
    from several threads."""

    def __init__(self, config: EmbedderConfig):
        self._build = embedder_for_db(config)
        self._built: dict[tuple, TextEmbedder] = {}
        self._lock = threading.Lock()

    def __call__(self, meta: dict[str, str]) -> TextEmbedder:
        key = (meta.get("embedder"), meta.get("embedder_backend"), meta.get("dim"))
        with self._lock:
            if key not in self._built:
                self._built[key] = self._build(dict(meta))
            return self._built[key]

    def configured(self) -> TextEmbedder:
        """The configured embedder: what a new, empty memory is written with."""
        return self({})


def open_memory(path: str | os.PathLike[str], config: Config, *, embedder: TextEmbedder | None = None,
                embedders: SharedEmbedders | None = None, create: bool = False,
                readonly: bool = False) -> MemoryGraph:
    """Open a memory DB with the user's ``memory`` settings. ``embedder``: the one to write and search with;
    else the one the DB was written with, built on first use (from ``embedders`` where several memories
    share them)."""
    from m3agent.memory.graph import MemoryGraph

    factory = None if embedder is not None else embedders or embedder_for_db(config.embedder)
    return MemoryGraph.open(path, config.memory, embedder=embedder, embedder_factory=factory, create=create,
                            readonly=readonly)


def build_controller(memory: MemoryGraph, config: Config, chat: ChatModel | None = None) -> Controller:
    from m3agent.control import Controller
    from m3agent.eval.grounding import follow_up

    return Controller(memory, chat if chat is not None else build_chat(config.control.chat), config.control,
                      rules=answer_rules(config.control), follow=follow_up(config.control))


def answer_rules(control: ControlConfig) -> dict:
    """The rules that may give an answer in the control model's place, by name, in the order they are tried."""
    from m3agent.eval.corrections import held_answer
    from m3agent.eval.grounding import quoted_answer

    rules = {"correction": held_answer} if control.hold_corrections else {}
    if control.quote_invented:
        rules["quote"] = quoted_answer
    return rules


def build_judge(config: JudgeConfig) -> Judge:
    return _build("judge", config.backend, config, {"chat": lambda: build_chat(config.chat)})


def build_rewarder(config: RewardConfig, judge: Judge | None = None) -> Rewarder:
    """The control task's reward, with the judge ``config.judge`` names unless one is given."""
    from m3agent.eval.rewards import Rewarder

    return Rewarder(judge if judge is not None else build_judge(config.judge), config)


def build_env(config: Config, name: str | None = None, **deps: Any) -> Env:
    """Environment ``name`` (default ``train.env``) built from the ``train`` section. ``deps`` are what config
    cannot build: the ``memory`` an episode acts on, or a ``judge``/``rewarder``/``embedder`` shared by many
    envs; the control settings, the reward, the text embedder and the memory settings (``memory_config``, what
    the memories an env opens itself are opened with) come from ``config`` unless given."""
    from m3agent.envs import EnvError

    name = name or config.train.env
    providers: dict[str, Callable[[], Any]] = {
        "control": lambda: config.control,
        "judge": lambda: build_judge(config.train.reward.judge),
        "rewarder": lambda: build_rewarder(config.train.reward, deps.get("judge")),
        "embedder": lambda: build_embedder(config.embedder),
        "memory_config": lambda: config.memory,
    }
    providers.update({key: (lambda value=value: value) for key, value in deps.items()})
    missing = [need for need in getattr(registry.load_class("env", name), "requires", ()) if need not in providers]
    if missing:
        raise EnvError(f"env {name!r} needs {', '.join(missing)} (pass them to build_env)")
    return _build("env", name, config.train, providers)


def judge_label(config: JudgeConfig) -> str:
    """How results and reports name the judge, without loading its model."""
    return registry.load_class("judge", config.backend).describe(config)
