"""A local Hugging Face model (a directory, or a GGUF file that transformers dequantizes) in process.

Slower than llama.cpp on CPU (the GGUF becomes float32 weights), but it needs nothing compiled and runs
any HF chat model on a GPU (``device=cuda``). :meth:`batch` pads on the left and generates for all
conversations at once. ``timeout`` maps to ``generate(max_time=...)``: the partial reply is kept.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from m3agent.models.bundled import bundled_chat_gguf, chat_adapter
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


class TransformersChat(ChatModel):
    name = "transformers"

    def __init__(self, config):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self._torch = torch
        self._take_limits(config)
        source = config.model or str(bundled_chat_gguf())
        kwargs = {}
        if source.endswith(".gguf"):
            kwargs["gguf_file"] = Path(source).name
            source = str(Path(source).parent)
        dtype = config.dtype if config.dtype != "auto" else ("float32" if config.device == "cpu" else "auto")
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
            self.model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype, **kwargs).to(config.device).eval()
        except (OSError, ImportError) as exc:  # a missing dir, or the gguf package for a GGUF file
            raise ChatUnavailableError(f"transformers cannot load {config.model or source}: {exc}") from exc
        self.adapter = chat_adapter(config.adapter, config.model, "peft")
        if self.adapter:
            self.model = _with_adapter(self.model, self.adapter)
        if config.threads:
            torch.set_num_threads(config.threads)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        window = getattr(self.model.config, "max_position_embeddings", None) or config.context
        self.context = min(config.context, window)
        self.device = config.device
        self.model_name = config.model or kwargs.get("gguf_file", source)

    def _complete(self, messages: Sequence[Message], params: Generation) -> ChatResponse:
        return self._complete_many([messages], params)[0]

    def _complete_many(self, conversations: Sequence[Sequence[Message]], params: Generation) -> list[ChatResponse]:
        torch, tok = self._torch, self.tokenizer
        prompts = [tok.apply_chat_template(text_only(m), add_generation_prompt=True, tokenize=False)
                   for m in conversations]
        batch = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        width = batch["input_ids"].shape[1]
        if width >= self.context:
            raise ContextOverflowError(f"transformers: prompt of {width} tokens exceeds the context of {self.context}")
        options = {"max_new_tokens": min(params.max_tokens, self.context - width), "max_time": params.timeout,
                   "pad_token_id": tok.pad_token_id, "do_sample": params.temperature > 0}
        if params.temperature > 0:
            options["temperature"] = params.temperature
        if params.stop:
            options.update(stop_strings=list(params.stop), tokenizer=tok)
        start = time.monotonic()
        with torch.inference_mode():
            output = self.model.generate(**batch, **options)
        timed_out = time.monotonic() - start >= params.timeout
        prompt_lengths = batch["attention_mask"].sum(dim=1).tolist()
        responses = []
        for row, prompt_tokens in zip(output[:, width:], prompt_lengths):
            ids = row.tolist()
            ended = tok.eos_token_id in ids
            ids = ids[: ids.index(tok.eos_token_id)] if ended else [i for i in ids if i != tok.pad_token_id]
            text = tok.decode(ids, skip_special_tokens=True)
            for stop in params.stop:
                text = text.split(stop, 1)[0]
            finish = "stop" if ended else ("timeout" if timed_out else "length")
            cut = looping_tail(text)
            if cut is not None:
                text, finish = text[:cut], "repetition"
            responses.append(ChatResponse(text, prompt_tokens=int(prompt_tokens), completion_tokens=len(ids),
                                          finish_reason=finish))
        return responses


def _with_adapter(model, adapter: str):
    """``model`` with the LoRA adapter in PEFT's folder ``adapter`` merged into its weights (decoding then costs
    what the base model's does)."""
    if not (Path(adapter) / "adapter_config.json").is_file():
        raise ChatUnavailableError(f"transformers applies an adapter folder of PEFT's (adapter_config.json); "
                                   f"{adapter} is not one")
    try:
        from peft import PeftModel
    except ImportError as exc:
        raise ChatUnavailableError("an adapter needs peft: pip install -e '.[rl]'") from exc
    return PeftModel.from_pretrained(model, adapter).merge_and_unload().eval()
