"""Chat LLM backends behind one interface; see :mod:`m3agent.models.llm.base` (built by m3agent.factory)."""

from m3agent.models.llm.base import (
    ChatError,
    ChatModel,
    ChatResponse,
    ChatUnavailableError,
    ContextOverflowError,
    TransientChatError,
)

__all__ = ["ChatError", "ChatModel", "ChatResponse", "ChatUnavailableError", "ContextOverflowError",
           "TransientChatError"]
