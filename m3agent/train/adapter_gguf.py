"""A trained LoRA adapter (PEFT's folder) as the GGUF adapter llama.cpp applies to the base GGUF at inference.

llama.cpp reads an adapter GGUF whose metadata says ``general.type = adapter``, ``adapter.type = lora`` and the
scale numerator ``adapter.lora.alpha``, and whose tensors are named after the base model's (``blk.3.attn_q.weight``)
plus ``.lora_a`` (rank x inputs) or ``.lora_b`` (outputs x rank): PEFT's ``lora_A`` / ``lora_B`` weights as they
are, except that llama.cpp keeps the query and key projections' rows in the order its rotary embedding reads them,
so their ``lora_b`` rows are permuted the way the base's converter permuted the base weights.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from m3agent.errors import M3AgentError

#: the llama architecture's projection names, Hugging Face -> GGUF
PROJECTIONS = {"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output",
               "gate_proj": "ffn_gate", "up_proj": "ffn_up", "down_proj": "ffn_down"}
_TENSOR = re.compile(r"layers\.(\d+)\.(?:self_attn|mlp)\.(\w+)\.lora_([AB])\.weight$")


class AdapterExportError(M3AgentError, ValueError):
    """An adapter this exporter cannot write for llama.cpp (another architecture, a module it has no name for)."""


def rope_rows(weights: np.ndarray, heads: int) -> np.ndarray:
    """Rows of a query/key projection in llama.cpp's order: each head's two rotary halves interleaved."""
    return weights.reshape(heads, 2, weights.shape[0] // heads // 2, *weights.shape[1:]).swapaxes(1, 2) \
        .reshape(weights.shape)


def base_heads(base_gguf: str | Path) -> tuple[str, int, int]:
    """``(architecture, attention heads, key/value heads)`` from the base model's GGUF."""
    from gguf import GGUFReader

    reader = GGUFReader(str(base_gguf))

    def value(key: str):
        field = reader.fields[key]
        return field.contents() if hasattr(field, "contents") else field.parts[field.data[0]]

    arch = str(value("general.architecture"))
    heads = int(value(f"{arch}.attention.head_count"))
    kv_heads = int(value(f"{arch}.attention.head_count_kv")) if f"{arch}.attention.head_count_kv" in reader.fields \
        else heads
    return arch, heads, kv_heads


def write_gguf_adapter(adapter_dir: str | Path, base_gguf: str | Path, out_path: str | Path) -> Path:
    """Write the adapter in ``adapter_dir`` (``adapter_config.json`` + ``adapter_model.safetensors``) for the base
    ``base_gguf`` to ``out_path``, in float32 (a LoRA of a small model is a few MB)."""
    from gguf import GGUFWriter
    from safetensors.numpy import load_file

    folder = Path(adapter_dir)
    config = json.loads((folder / "adapter_config.json").read_text(encoding="utf-8"))
    arch, heads, kv_heads = base_heads(base_gguf)
    if arch != "llama":
        raise AdapterExportError(f"{base_gguf} is a {arch} model; the adapter export knows llama's tensor names")
    tensors = load_file(str(folder / "adapter_model.safetensors"))
    writer = GGUFWriter(str(out_path), arch)
    writer.add_string("general.type", "adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", float(config["lora_alpha"]))
    for name in sorted(tensors):
        match = _TENSOR.search(name)
        if not match or match.group(2) not in PROJECTIONS:
            raise AdapterExportError(f"no llama.cpp name for adapter tensor {name!r}")
        layer, module, half = int(match.group(1)), match.group(2), match.group(3)
        weights = np.ascontiguousarray(tensors[name], dtype=np.float32)
        if half == "B" and module in ("q_proj", "k_proj"):
            weights = rope_rows(weights, heads if module == "q_proj" else kv_heads)
        writer.add_tensor(f"blk.{layer}.{PROJECTIONS[module]}.weight.lora_{half.lower()}", weights)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return Path(out_path)
