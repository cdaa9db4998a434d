"""A GGUF model with a LoRA adapter merged into its weights, built once and cached.

llama.cpp applies a GGUF adapter at every token as two extra small matrix products per adapted projection; on a
135M-parameter model that is a quarter of the decoding time (docs/BENCHMARKS.md). Merged weights cost nothing at
decoding. llama.cpp ships its merge tool only as a C++ binary, so this one is written with gguf-py (a dependency
of llama-cpp-python's converter, installed with m3agent): each adapted weight is dequantized, gets
``alpha / rank * B @ A`` added, and is written as Q8_0 (8 bits: the small LoRA update survives, which requantizing
to the base's 4 bits would round away); every other tensor and all metadata are copied as they are.

The merged file goes to a cache folder named by the base file (path, size, time) and the adapter's content,
written to a temporary name and renamed, so concurrent first uses never read half a file and a changed adapter
never meets a stale merge.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import numpy as np

from m3agent.errors import M3AgentError
from m3agent.files.cache import cache_root
from m3agent.files.digest import file_digest

MERGED_TYPE = "Q8_0"


class AdapterMergeError(M3AgentError, ValueError):
    """An adapter that does not fit its base model (a tensor it adapts is missing, or shapes disagree)."""


def merged_model(base: str | os.PathLike[str], adapter: str | os.PathLike[str], cache: Path | None = None) -> Path:
    """The path of ``base`` with ``adapter`` merged, building it on first use."""
    base, adapter = Path(base), Path(adapter)
    stat = base.stat()  # the base is large and changes only when reinstalled: its path, size and time name it
    key = hashlib.sha256(f"{base.resolve()}:{stat.st_size}:{stat.st_mtime_ns}:{file_digest(adapter)}:{MERGED_TYPE}"
                         .encode()).hexdigest()[:20]
    folder = cache or cache_root() / "merged"
    out = folder / f"{base.stem}+{adapter.stem}-{key}.gguf"
    if out.is_file():
        return out
    folder.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=out.name, suffix=".part", dir=folder)
    os.close(handle)
    try:
        write_merged(base, adapter, Path(temporary))
        os.replace(temporary, out)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return out


def lora_updates(adapter: Path) -> dict[str, np.ndarray]:
    """Base tensor name -> the update ``alpha / rank * B @ A`` its adapter pair adds (rows x columns, float32)."""
    from gguf import GGUFReader

    reader = GGUFReader(str(adapter))
    kind = reader.fields.get("general.type")
    if kind is None or kind.contents() != "adapter" or reader.fields["adapter.type"].contents() != "lora":
        raise AdapterMergeError(f"{adapter} is not a GGUF LoRA adapter")
    alpha = float(reader.fields["adapter.lora.alpha"].contents())
    halves: dict[str, dict[str, np.ndarray]] = {}
    for tensor in reader.tensors:
        name, _, half = tensor.name.rpartition(".")
        halves.setdefault(name, {})[half] = np.asarray(tensor.data, dtype=np.float32)
    updates = {}
    for name, pair in halves.items():
        if set(pair) != {"lora_a", "lora_b"}:
            raise AdapterMergeError(f"{adapter}: {name} lacks lora_a or lora_b")
        a, b = pair["lora_a"], pair["lora_b"]  # rank x inputs, outputs x rank
        updates[name] = (alpha / a.shape[0]) * (b @ a)
    return updates


def write_merged(base: Path, adapter: Path, out: Path) -> None:
    from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter
    from gguf.quants import dequantize, quantize

    updates = lora_updates(adapter)
    reader = GGUFReader(str(base))
    arch = reader.fields["general.architecture"].contents()
    writer = GGUFWriter(str(out), arch)
    for field in reader.fields.values():
        if field.name == "general.architecture" or field.name.startswith("GGUF."):
            continue  # the writer adds these itself
        kind = field.types[0]
        writer.add_key_value(field.name, field.contents(), kind,
                             sub_type=field.types[-1] if kind == GGUFValueType.ARRAY else None)
    merged_type = GGMLQuantizationType[MERGED_TYPE]
    datas = []
    for tensor in reader.tensors:
        data, kind = tensor.data, tensor.tensor_type
        update = updates.pop(tensor.name, None)
        if update is not None:
            weights = dequantize(np.asarray(data), kind).astype(np.float32)
            if weights.shape != update.shape:
                raise AdapterMergeError(f"{adapter}: the update of {tensor.name} is {update.shape}, the weight "
                                        f"{weights.shape}")
            data, kind = quantize(weights + update, merged_type), merged_type
        writer.add_tensor_info(tensor.name, data.shape, data.dtype, data.nbytes, kind)
        datas.append(data)
    if updates:
        raise AdapterMergeError(f"{adapter} adapts tensors {base} lacks: {', '.join(sorted(updates)[:5])}")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for data in datas:
        writer.write_tensor_data(data)
    writer.close()
