"""vLLM's in-process engine for batch work on a GPU node (``pip install vllm``; not part of the CPU stack).

:meth:`batch` hands every conversation to one ``LLM.chat`` call, which vLLM schedules with continuous
batching: the way to run a whole benchmark's rounds at once. To share one server between processes,
run ``vllm serve MODEL`` and use the ``openai`` backend instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from m3agent.models.llm.base import (
    ChatModel,
    ChatResponse,
    ChatUnavailableError,
    ContextOverflowError,
    Generation,
    Message,
)


class VLLMChat(ChatModel):
    name = "vllm"
    supports_images = True  # for multimodal models; vLLM rejects images for text-only ones

    def __init__(self, config):
        try:
            import vllm
        except ImportError as exc:
            raise ChatUnavailableError(
                "the vllm backend needs a GPU machine with `pip install vllm`; or serve the model with "
                "`vllm serve MODEL` and use backend=openai with base_url=http://HOST:8000/v1") from exc
        if not config.model:
            raise ChatUnavailableError("the vllm backend needs control.chat.model (a HF model name or directory)")
        self._take_limits(config)
        self._sampling = vllm.SamplingParams
        self.seed = config.seed
        self.model = config.model
        self.llm = vllm.LLM(model=config.model, dtype=config.dtype, tensor_parallel_size=config.tensor_parallel,
                            gpu_memory_utilization=config.gpu_memory, max_model_len=config.context, seed=config.seed)

    def _complete(self, messages: Sequence[Message], params: Generation) -> ChatResponse:
        return self._complete_many([messages], params)[0]

    def _complete_many(self, conversations: Sequence[Sequence[Message]], params: Generation) -> list[ChatResponse]:
        sampling = self._sampling(max_tokens=params.max_tokens, temperature=params.temperature,
                                  stop=list(params.stop) or None, seed=self.seed)
        try:
            outputs = self.llm.chat([list(m) for m in conversations], sampling, use_tqdm=False)
        except ValueError as exc:  # vLLM refuses prompts longer than max_model_len this way
            if "longer than" in str(exc) or "model length" in str(exc):
                raise ContextOverflowError(f"vllm: {exc}") from exc
            raise
        responses = []
        for output in outputs:
            best = output.outputs[0]
            responses.append(ChatResponse(best.text, prompt_tokens=len(output.prompt_token_ids or ()),
                                          completion_tokens=len(best.token_ids or ()),
                                          finish_reason=best.finish_reason or "stop"))
        return responses
