"""A trained adapter leaves transformers as the GGUF adapter llama.cpp applies, and both backends load it."""

import pytest

from m3agent.config import ChatConfig
from m3agent.models.bundled import bundled_chat_gguf
from m3agent.models.llm.base import ChatUnavailableError
from m3agent.models.llm.llamacpp import LlamaCppChat
from m3agent.models.llm.transformers import TransformersChat
from m3agent.train.adapter_gguf import write_gguf_adapter
from m3agent.train.policy import LoraSettings, load_base, with_adapter

pytestmark = pytest.mark.models

@pytest.fixture(scope="module")
def adapter(tmp_path_factory):
    """A LoRA on the query, key, value and output projections, far from zero so that it changes what is said."""
    import torch

    folder = tmp_path_factory.mktemp("adapter")
    _, model = load_base()
    peft = with_adapter(model, LoraSettings(rank=8, alpha=16))
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, weights in peft.named_parameters():
            if "lora_B" in name:
                weights.copy_(torch.randn(weights.shape, generator=generator) * 0.15)
    peft.save_pretrained(str(folder / "peft"))
    return folder / "peft", write_gguf_adapter(folder / "peft", bundled_chat_gguf(), folder / "adapter.gguf")


TEXT = ("The old lighthouse keeper climbed the stairs every evening to light the lamp, and the fishermen in the "
        "harbour below knew that as long as the light turned, the rocks at the mouth of the bay would not catch them.")


def _llama_cpp_choices(adapter: str | None, ids: list[int]) -> list[int]:
    """llama.cpp's most likely next token at every position of ``ids`` (the base GGUF, with ``adapter`` applied)."""
    import numpy as np
    from llama_cpp import Llama

    llm = Llama(model_path=str(bundled_chat_gguf()), lora_path=adapter, n_ctx=256, logits_all=True, verbose=False)
    llm.eval(ids)
    return np.asarray(llm.scores[: len(ids)]).argmax(axis=1).tolist()


def test_llama_cpp_applies_the_exported_adapter_as_transformers_merges_it(adapter):
    import torch

    folder, gguf = adapter
    chat = TransformersChat(ChatConfig(backend="transformers", adapter=str(folder)))  # PEFT's folder, merged
    ids = chat.tokenizer(TEXT)["input_ids"]
    with torch.no_grad():
        merged = chat.model(torch.tensor([ids])).logits[0].argmax(dim=1).tolist()
    with_gguf, plain = _llama_cpp_choices(str(gguf), ids), _llama_cpp_choices(None, ids)

    def agree(a, b):
        return sum(x == y for x, y in zip(a, b)) / len(ids)

    # llama.cpp computes on the Q4_1 weights, transformers on their float32 copy: a token here and there differs
    assert agree(with_gguf, merged) >= 0.9
    assert agree(with_gguf, plain) <= agree(with_gguf, merged) - 0.2  # and the adapter is what moves it there


def test_an_adapter_of_the_wrong_kind_is_a_clear_error(adapter, tmp_path):
    folder, gguf = adapter
    with pytest.raises(ChatUnavailableError, match="GGUF adapter file"):
        LlamaCppChat(ChatConfig(backend="llamacpp", adapter=str(folder)))
    with pytest.raises(ChatUnavailableError, match="adapter folder of PEFT"):
        TransformersChat(ChatConfig(backend="transformers", adapter=str(gguf)))
