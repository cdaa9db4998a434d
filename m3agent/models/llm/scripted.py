"""A scripted chat model for tests and dry runs: replies come from a list, a function or a JSON file."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence

from m3agent.models.llm.base import ChatModel, ChatResponse, Generation, Message


class ScriptedChat(ChatModel):
    """Returns ``replies`` in order (the last one repeats), or ``reply(messages)`` when callable.
    A reply that is an exception instance is raised instead (to exercise retries and errors).
    Every request is kept in ``calls`` so tests can check what was sent."""

    name = "scripted"

    def __init__(self, replies: Sequence[str | BaseException] | Callable[[Sequence[Message]], str] = ("",),
                 supports_images: bool = True, retries: int = 2, backoff: float = 0.0, concurrency: int = 1):
        self.replies = replies
        self.supports_images = supports_images
        self.retries, self.backoff, self.concurrency = retries, backoff, concurrency
        self.calls: list[list[Message]] = []
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config) -> ScriptedChat:
        """``model`` names a JSON file holding the list of replies (a dry run of the control loop)."""
        replies = ("Action: [Answer]\nContent: (scripted)",)
        if config.model:
            with open(config.model, encoding="utf-8") as fh:
                replies = tuple(json.load(fh))
        return cls(replies, retries=config.retries)

    def _complete(self, messages: Sequence[Message], params: Generation) -> ChatResponse:
        with self._lock:
            self.calls.append(list(messages))
            if callable(self.replies):
                reply = self.replies(messages)
            else:
                reply = self.replies[min(len(self.calls) - 1, len(self.replies) - 1)]
        if isinstance(reply, BaseException):
            raise reply
        return ChatResponse(reply, prompt_tokens=sum(len(str(m.get("content", ""))) // 4 for m in messages),
                            completion_tokens=len(reply) // 4)
