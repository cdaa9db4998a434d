"""A scripted chat model for tests and dry runs: replies come from a list (or a function)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from m3agent.models.llm.base import ChatModel, ChatResponse, Message


class ScriptedChat(ChatModel):
    """Returns ``replies`` in order (the last one repeats), or ``reply(messages)`` when callable.
    Every request is kept in ``calls`` so tests can check what was sent."""

    name = "scripted"

    def __init__(self, replies: Sequence[str] | Callable[[Sequence[Message]], str] = ("",),
                 supports_images: bool = True):
        self.replies = replies
        self.supports_images = supports_images
        self.calls: list[list[Message]] = []

    def chat(self, messages, *, max_tokens: int = 512, temperature: float = 0.0, stop=None) -> ChatResponse:
        self.calls.append(list(messages))
        if callable(self.replies):
            text = self.replies(messages)
        else:
            text = self.replies[min(len(self.calls) - 1, len(self.replies) - 1)]
        return ChatResponse(text, prompt_tokens=sum(len(str(m.get("content", ""))) // 4 for m in messages),
                            completion_tokens=len(text) // 4)
