"""The chat-model contract: OpenAI-style messages in, text out; retries and batches for every backend.

A message is ``{"role": "system"|"user"|"assistant", "content": str | list[part]}``; a part is
``{"type": "text", "text": ...}`` or ``{"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,..."}}``
(the OpenAI format, which vLLM and llama.cpp servers also accept).

Backends implement :meth:`ChatModel._complete` for one conversation and raise :class:`TransientChatError`
for failures worth another try (a timeout, a refused connection, a 5xx); :meth:`ChatModel.chat` retries
those with backoff. A caller may name the ``format`` of the reply it wants (a grammar in ``m3agent/prompts``):
a backend that decodes under a grammar applies it, the others ignore it, so callers never depend on it. A backend that batches natively (vLLM) overrides :meth:`ChatModel._complete_many`.
"""

from __future__ import annotations

import base64
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from m3agent.errors import M3AgentError

Message = dict


@dataclass
class ChatResponse:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    finish_reason: str = "stop"  # "stop" | "length" | "timeout" | "repetition" (cut at a loop)
    raw: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Generation:
    """Sampling settings of one request."""

    max_tokens: int = 512
    temperature: float = 0.0
    stop: tuple[str, ...] = ()
    timeout: float = 120.0
    format: str = ""  # a reply format with a grammar (m3agent.prompts.load_grammar); "" is free text


class ChatError(M3AgentError, RuntimeError):
    """A chat request failed for good (after its retries, or for a reason retrying cannot fix)."""

    exit_code = 1


class TransientChatError(ChatError):
    """A failure another attempt may not meet: timeout, connection refused, overload."""


class ContextOverflowError(ChatError):
    """The conversation does not fit the model's context window; the caller should shorten it."""


class ChatUnavailableError(ChatError):
    """The backend cannot start here: its package, model file or server is missing."""

    exit_code = 2


class ChatModel(ABC):
    name: str = "chat"
    supports_images: bool = False
    retries: int = 2
    backoff: float = 1.0  # seconds before the first retry; doubles each time
    timeout: float = 120.0
    concurrency: int = 1  # conversations :meth:`batch` sends at once (thread-safe backends only)

    @classmethod
    def from_config(cls, config) -> ChatModel:
        """Build from a :class:`m3agent.config.ChatConfig` (every backend but the scripted one takes it whole)."""
        return cls(config)

    def _take_limits(self, config) -> None:
        self.retries, self.timeout = config.retries, config.timeout

    @abstractmethod
    def _complete(self, messages: Sequence[Message], params: Generation) -> ChatResponse:
        """One conversation, one attempt."""

    def _complete_many(self, conversations: Sequence[Sequence[Message]], params: Generation) -> list[ChatResponse]:
        """Several conversations, one attempt each; concurrent when the backend allows it."""
        if self.concurrency <= 1 or len(conversations) <= 1:
            return [self._complete(messages, params) for messages in conversations]
        with ThreadPoolExecutor(min(self.concurrency, len(conversations))) as pool:
            return list(pool.map(lambda messages: self._complete(messages, params), conversations))

    def chat(self, messages: Sequence[Message], *, max_tokens: int = 512, temperature: float = 0.0,
             stop: Sequence[str] | None = None, format: str = "") -> ChatResponse:
        params = self._params(max_tokens, temperature, stop, format)
        return self._with_retries(lambda: [self._complete(messages, params)])[0]

    def batch(self, conversations: Sequence[Sequence[Message]], *, max_tokens: int = 512, temperature: float = 0.0,
              stop: Sequence[str] | None = None, format: str = "") -> list[ChatResponse]:
        """Replies to several conversations, in order. One failure fails the call (callers that need
        per-conversation errors fall back to :meth:`chat`)."""
        if not conversations:
            return []
        params = self._params(max_tokens, temperature, stop, format)
        return self._with_retries(lambda: self._complete_many(conversations, params))

    def _params(self, max_tokens: int, temperature: float, stop: Sequence[str] | None, format: str = "") -> Generation:
        return Generation(max_tokens, temperature, tuple(stop or ()), self.timeout, format)

    def _with_retries(self, call) -> list[ChatResponse]:
        attempts = max(1, self.retries + 1)
        for attempt in range(attempts):
            start = time.perf_counter()
            try:
                responses = call()
            except TransientChatError as exc:
                if attempt == attempts - 1:
                    raise ChatError(f"{self.name}: gave up after {attempts} attempts: {exc}") from exc
                time.sleep(self.backoff * 2**attempt)
                continue
            elapsed = time.perf_counter() - start
            for response in responses:
                response.seconds = response.seconds or elapsed / len(responses)
            return responses
        raise AssertionError("unreachable")  # pragma: no cover


def image_part(jpeg: bytes) -> dict:
    return {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64," + base64.b64encode(jpeg).decode()}}


def text_part(text: str) -> dict:
    return {"type": "text", "text": text}


def text_only(messages: Sequence[Message]) -> list[Message]:
    """The conversation with image parts dropped and text parts joined, for text-only models."""
    out = []
    for message in messages:
        content = message.get("content", "")
        if not isinstance(content, str):
            content = "\n".join(part.get("text", "") for part in content if part.get("type") == "text")
        out.append({"role": message["role"], "content": content})
    return out


def looping_tail(text: str, times: int = 4, shortest: int = 4, longest: int = 160) -> int | None:
    """Where to cut ``text`` so that a tail repeating itself ``times``+ times in a row is left once, or None.

    Small models at temperature 0 fall into loops ("I'm a chef. I'm a chef. ..."); generation stops
    there and keeps one copy, instead of running to ``max_tokens``."""
    for unit in range(shortest, min(longest, len(text) // times) + 1):
        tail = text[-unit:]
        if all(text[-(k + 1) * unit: len(text) - k * unit] == tail for k in range(1, times)):
            start = len(text) - times * unit
            while start >= unit and text[start - unit:start] == tail:
                start -= unit
            return start + unit
    return None


def answer_text(text: str) -> str:
    """What follows a reasoning model's ``</think>`` (the whole text when there is none)."""
    return text.rsplit("</think>", 1)[-1].strip()
