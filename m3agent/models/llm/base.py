"""The chat-model contract: OpenAI-style messages in, text out.

A message is ``{"role": "system"|"user"|"assistant", "content": str | list[part]}``; a part is
``{"type": "text", "text": ...}`` or ``{"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,..."}}``
(the OpenAI format, which vLLM and llama.cpp servers also accept).
"""

from __future__ import annotations

import base64
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

Message = dict


@dataclass
class ChatResponse:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    raw: dict = field(default_factory=dict)


class ChatModel(ABC):
    name: str
    supports_images: bool = False

    @abstractmethod
    def chat(self, messages: Sequence[Message], *, max_tokens: int = 512, temperature: float = 0.0,
             stop: Sequence[str] | None = None) -> ChatResponse: ...

    def batch(self, conversations: Sequence[Sequence[Message]], **kwargs) -> list[ChatResponse]:
        """Several conversations; backends that can batch or run concurrently override this."""
        return [self.chat(messages, **kwargs) for messages in conversations]


def image_part(jpeg: bytes) -> dict:
    return {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64," + base64.b64encode(jpeg).decode()}}


def text_part(text: str) -> dict:
    return {"type": "text", "text": text}


def answer_text(text: str) -> str:
    """What follows a reasoning model's ``</think>`` (the whole text when there is none)."""
    return text.rsplit("</think>", 1)[-1].strip()


def timed(fn):
    def wrapper(*args, **kwargs) -> ChatResponse:
        start = time.perf_counter()
        response = fn(*args, **kwargs)
        response.seconds = time.perf_counter() - start
        return response

    return wrapper
