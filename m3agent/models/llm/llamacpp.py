"""llama-cpp-python in process: the embedded default (SmolLM2-135M GGUF, ~100 tokens/s on 2 cores).

Replies stream token by token so that a request past its ``timeout`` stops and keeps what it has
(``finish_reason="timeout"``). One model instance serves one request at a time (it is not thread-safe).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from m3agent.models.bundled import bundled_chat_gguf
from m3agent.models.llm.base import (
    ChatModel,
    ChatResponse,
    ChatUnavailableError,
    ContextOverflowError,
    Generation,
    Message,
    looping_tail,
    text_only,
)

LOOP_CHECK_EVERY = 16  # tokens between checks for a reply stuck in a loop

INSTALL_HINT = ("the llamacpp backend needs llama-cpp-python (scripts/setup.sh builds it once and caches the "
                "wheel; or `pip install llama-cpp-python==0.3.36`)")


class LlamaCppChat(ChatModel):
    name = "llamacpp"

    def __init__(self, config):
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise ChatUnavailableError(INSTALL_HINT) from exc
        self._take_limits(config)
        self.path = config.model or str(bundled_chat_gguf())
        try:
            self.llm = Llama(model_path=self.path, n_ctx=config.context, n_threads=config.threads or None,
                             seed=config.seed, verbose=False)
        except ValueError as exc:  # llama.cpp reports a missing or unreadable file this way
            raise ChatUnavailableError(f"llama.cpp cannot load {self.path}: {exc}") from exc
        self.model = self.path.rsplit("/", 1)[-1]
        self.context = config.context
        self._lock = threading.Lock()

    def _complete(self, messages: Sequence[Message], params: Generation) -> ChatResponse:
        deadline = time.monotonic() + params.timeout
        pieces: list[str] = []
        finish, tokens = "stop", 0
        with self._lock:
            try:
                stream = self.llm.create_chat_completion(messages=text_only(messages), max_tokens=params.max_tokens,
                                                         temperature=params.temperature, stop=list(params.stop) or None,
                                                         stream=True)
                for chunk in stream:
                    choice = chunk["choices"][0]
                    piece = choice.get("delta", {}).get("content")
                    if piece:
                        pieces.append(piece)
                        tokens += 1
                        if tokens % LOOP_CHECK_EVERY == 0:
                            text = "".join(pieces)
                            cut = looping_tail(text)
                            if cut is not None:
                                pieces, finish = [text[:cut]], "repetition"
                                stream.close()
                                break
                    finish = choice.get("finish_reason") or finish
                    if time.monotonic() > deadline:
                        finish = "timeout"
                        stream.close()
                        break
            except ValueError as exc:
                if "context window" in str(exc):
                    raise ContextOverflowError(f"llama.cpp: {exc}") from exc
                raise
            prompt_tokens = max(0, self.llm.n_tokens - tokens)
        return ChatResponse("".join(pieces), prompt_tokens=prompt_tokens, completion_tokens=tokens,
                            finish_reason=finish)
