"""Any OpenAI-compatible chat server: vLLM (``vllm serve``), llama.cpp's server, OpenAI, Azure OpenAI.

The key comes from the environment variable ``api_key_env`` names (a local server needs none). With no
``model`` set, the server's first listed model is used, which is what a vLLM or llama.cpp server serves.
Requests run ``concurrency`` at a time in :meth:`batch`; the client's own retries are off, so that
:class:`~m3agent.models.llm.base.ChatModel` retries every backend the same way. A reply ``format``'s grammar
goes out only in the request field ``grammar_field`` names (``grammar`` for llama.cpp's server): a plain
OpenAI endpoint would reject a field it does not know, so none is sent unless configured.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from m3agent.models.llm.base import (
    ChatError,
    ChatModel,
    ChatResponse,
    ChatUnavailableError,
    ContextOverflowError,
    Generation,
    Message,
    TransientChatError,
)
from m3agent.prompts import load_grammar

_OVERFLOW_HINTS = ("context length", "context window", "maximum context", "too long", "exceed")


class OpenAIChat(ChatModel):
    name = "openai"
    supports_images = True  # the server decides; a text-only model rejects image parts with a 400

    def __init__(self, config):
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - a core dependency
            raise ChatUnavailableError("the openai backend needs `pip install openai`") from exc
        self._openai = openai
        self._take_limits(config)
        self.concurrency = max(1, config.concurrency)
        self.seed = config.seed
        self.grammar_field = config.grammar_field if config.grammar else ""
        base_url = config.base_url or os.environ.get("OPENAI_BASE_URL") or None
        key = os.environ.get(config.api_key_env or "OPENAI_API_KEY")
        if not key:
            if not base_url:
                raise ChatUnavailableError(
                    f"the openai backend needs a server: set control.chat.base_url (e.g. http://host:8000/v1 for "
                    f"vLLM) or an API key in ${config.api_key_env}")
            key = "EMPTY"  # local servers (vLLM, llama.cpp) accept any key
        common = {"api_key": key, "timeout": config.timeout, "max_retries": 0}
        if config.api_version:
            self.client = openai.AzureOpenAI(azure_endpoint=base_url, api_version=config.api_version, **common)
        else:
            self.client = openai.OpenAI(base_url=base_url, **common)
        self.where = base_url or "api.openai.com"
        self.model = config.model or self._served_model()

    def _served_model(self) -> str:
        try:
            models = self._call(lambda: self.client.models.list().data)
        except ChatError as exc:
            raise ChatUnavailableError(f"cannot list the models of {self.where}: {exc}") from exc
        if not models:
            raise ChatUnavailableError(f"{self.where} serves no model; set control.chat.model")
        return models[0].id

    def _complete(self, messages: Sequence[Message], params: Generation) -> ChatResponse:
        request = {"model": self.model, "messages": list(messages), "max_tokens": params.max_tokens,
                   "temperature": params.temperature, "seed": self.seed}
        if params.stop:
            request["stop"] = list(params.stop)
        if params.format and self.grammar_field:
            request["extra_body"] = {self.grammar_field: load_grammar(params.format)}
        completion = self._call(lambda: self.client.chat.completions.create(**request))
        if not completion.choices:
            raise TransientChatError(f"{self.where} returned no choices")
        choice = completion.choices[0]
        usage = completion.usage
        return ChatResponse(choice.message.content or "", prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
                            finish_reason=choice.finish_reason or "stop")

    def _call(self, request):
        """Run one request, turning the client's errors into the contract's."""
        openai = self._openai
        try:
            return request()
        except (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError,
                openai.InternalServerError) as exc:
            raise TransientChatError(f"{self.where}: {type(exc).__name__}: {exc}") from exc
        except openai.BadRequestError as exc:
            message = str(exc)
            if any(hint in message.lower() for hint in _OVERFLOW_HINTS):
                raise ContextOverflowError(f"{self.where}: {message}") from exc
            raise ChatError(f"{self.where}: bad request: {message}") from exc
        except openai.APIStatusError as exc:
            if exc.status_code >= 500:
                raise TransientChatError(f"{self.where}: HTTP {exc.status_code}: {exc}") from exc
            raise ChatError(f"{self.where}: HTTP {exc.status_code}: {exc}") from exc
