"""Chat LLM backends behind one interface; see :mod:`m3agent.models.llm.base`."""

from __future__ import annotations

import importlib.util

from m3agent.models.llm.base import (
    ChatError,
    ChatModel,
    ChatResponse,
    ChatUnavailableError,
    ContextOverflowError,
    TransientChatError,
)

__all__ = ["ChatError", "ChatModel", "ChatResponse", "ChatUnavailableError", "ContextOverflowError",
           "TransientChatError", "build_chat", "resolve_backend"]


def resolve_backend(name: str) -> str:
    """``auto`` (or empty) is the embedded default: llama-cpp-python when installed, else transformers."""
    if name in ("", "auto"):
        return "llamacpp" if importlib.util.find_spec("llama_cpp") is not None else "transformers"
    return name


def build_chat(config) -> ChatModel:
    """The chat model a :class:`m3agent.config.ChatConfig` describes."""
    from m3agent import registry

    return registry.load_class("chat", resolve_backend(config.backend)).from_config(config)
