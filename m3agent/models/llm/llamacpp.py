"""llama-cpp-python in process: the embedded default (SmolLM2-135M GGUF, ~100 tokens/s on 2 cores).

Replies stream token by token so that a request past its ``timeout`` stops and keeps what it has
(``finish_reason="timeout"``). One model instance serves one request at a time (it is not thread-safe).
A request that names a reply ``format`` is decoded under that format's grammar (``grammar`` on, the
default): small models follow ``Action:``/``Content:`` only when held to it.
``threads`` sets both decoding and prompt threads: on a shared machine 1 is much faster than 2.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from m3agent.models.bundled import bundled_chat_gguf, chat_adapter
from m3agent.models.llm.base import (
    ChatError,
    ChatModel,
    ChatResponse,
    ChatUnavailableError,
    ContextOverflowError,
    Generation,
    Message,
    looping_tail,
    text_only,
)
from m3agent.prompts import load_grammar

log = logging.getLogger(__name__)

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
        self.adapter = chat_adapter(config.adapter, config.model, "gguf")
        if self.adapter and not (self.adapter.endswith(".gguf") and Path(self.adapter).is_file()):
            raise ChatUnavailableError(f"llama.cpp applies a GGUF adapter file; {self.adapter} is not one "
                                       "(m3agent train control writes adapter.gguf beside PEFT's folder)")
        self.merged, lora = "", self.adapter  # the adapter is merged into a cached copy of the weights, or applied
        if self.adapter and config.merge_adapter:
            from m3agent.models.llm.merged_gguf import merged_model

            try:
                self.merged = self.path = str(merged_model(self.path, self.adapter))
                lora = ""
            except OSError as exc:  # no writable cache: the same model, the adapter applied at every token
                log.warning("cannot keep a merged copy of %s with its adapter (%s); applying the adapter per token",
                            self.path, exc)
        try:
            self.llm = Llama(model_path=self.path, n_ctx=config.context, n_threads=config.threads or None,
                             n_threads_batch=config.threads or None, seed=config.seed, verbose=False,
                             lora_path=lora or None)
        except ValueError as exc:  # llama.cpp reports a missing or unreadable file this way
            raise ChatUnavailableError(f"llama.cpp cannot load {self.path}: {exc}") from exc
        self.model = self.path.rsplit("/", 1)[-1]
        self.context = config.context
        self._lock = threading.Lock()
        self.grammar = config.grammar
        self._grammars: dict = {}  # format -> LlamaGrammar, each checked once

    def grammar_for(self, format: str):
        """The compiled grammar of reply ``format``, or None when there is none to apply (no format, or
        ``grammar`` off). A grammar llama.cpp cannot parse is a :class:`ChatError`, never a crash."""
        if not format or not self.grammar:
            return None
        if format not in self._grammars:
            from llama_cpp import LlamaGrammar

            try:
                text = load_grammar(format)
            except FileNotFoundError as exc:
                raise ChatError(f"llama.cpp: no grammar for reply format {format!r}") from exc
            if not grammar_compiles(self.llm, text):
                raise ChatError(f"llama.cpp cannot parse the grammar of reply format {format!r}")
            self._grammars[format] = LlamaGrammar.from_string(text, verbose=False)
        return self._grammars[format]

    def _complete(self, messages: Sequence[Message], params: Generation) -> ChatResponse:
        deadline = time.monotonic() + params.timeout
        pieces: list[str] = []
        finish, tokens = "stop", 0
        grammar = self.grammar_for(params.format)
        with self._lock:
            try:
                stream = self.llm.create_chat_completion(messages=text_only(messages), max_tokens=params.max_tokens,
                                                         temperature=params.temperature, stop=list(params.stop) or None,
                                                         grammar=grammar, stream=True)
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


def grammar_compiles(llm, text: str) -> bool:
    """Whether llama.cpp parses GBNF ``text`` against ``llm``'s vocabulary. llama-cpp-python checks a grammar
    only when a request's sampler is built, where a bad one would leave a null sampler in the chain."""
    import llama_cpp

    sampler = llama_cpp.llama_sampler_init_grammar(llama_cpp.llama_model_get_vocab(llm.model), text.encode("utf-8"),
                                                   b"root")
    if not sampler:
        return False
    llama_cpp.llama_sampler_free(sampler)
    return True
