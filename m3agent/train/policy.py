"""The control policy being trained: the bundled chat model in transformers, with a LoRA adapter on top.

The bundled SmolLM2-135M ships as a Q4_1 GGUF; transformers de-quantizes it to float32 weights (a few seconds),
and the adapter is trained on those. What is saved is the adapter alone (PEFT's folder: a few MB), which
:mod:`m3agent.train.adapter_gguf` turns into the GGUF adapter llama.cpp applies at inference.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from m3agent.models.bundled import bundled_chat_gguf


@dataclass(frozen=True)
class LoraSettings:
    """Which weights learn and how much: a rank-``rank`` update of the attention projections."""

    rank: int = 16
    alpha: int = 32
    dropout: float = 0.05
    targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")

    def peft_config(self):
        from peft import LoraConfig

        return LoraConfig(r=self.rank, lora_alpha=self.alpha, lora_dropout=self.dropout,
                          target_modules=list(self.targets), task_type="CAUSAL_LM")


def load_base(model: str = "", threads: int = 0):
    """``(tokenizer, model)`` of ``model`` (a HF folder or a GGUF file; empty: the bundled SmolLM2) in float32."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if threads:
        torch.set_num_threads(threads)
    source = model or str(bundled_chat_gguf())
    kwargs = {}
    if source.endswith(".gguf"):
        kwargs["gguf_file"] = Path(source).name
        source = str(Path(source).parent)
    tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32, **kwargs)
    if "gguf_file" in kwargs:  # the weights are float32 now: nothing of the GGUF's quantization is left to train around
        model.hf_quantizer, model.is_quantized = None, False
        model.config.__dict__.pop("quantization_config", None)
    return tokenizer, model


def with_adapter(model, lora: LoraSettings, adapter: str | Path | None = None):
    """``model`` with a LoRA adapter: the one saved at ``adapter`` (trainable, to go on training it), or a new one."""
    from peft import PeftModel, get_peft_model

    if adapter:
        return PeftModel.from_pretrained(model, str(adapter), is_trainable=True)
    return get_peft_model(model, lora.peft_config())
