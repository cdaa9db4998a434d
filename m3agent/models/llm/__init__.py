"""Chat LLM backends behind one interface; see :mod:`m3agent.models.llm.base`."""

from m3agent.models.llm.base import ChatModel, ChatResponse

__all__ = ["ChatModel", "ChatResponse"]
