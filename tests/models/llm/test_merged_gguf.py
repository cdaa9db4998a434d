"""The control adapter merged into a cached copy of the bundled GGUF: the update lands in the adapted weights, every
other tensor and the metadata are copied as they were, and a second use reads the cache."""

import numpy as np
import pytest

from m3agent.models.bundled import CONTROL_ADAPTER_DIR, bundled_chat_gguf
from m3agent.models.llm.merged_gguf import AdapterMergeError, lora_updates, merged_model

pytestmark = pytest.mark.models

ADAPTER = CONTROL_ADAPTER_DIR / "adapter.gguf"


@pytest.fixture(scope="module")
def merged(tmp_path_factory):
    cache = tmp_path_factory.mktemp("merged")
    return cache, merged_model(bundled_chat_gguf(), ADAPTER, cache)


def test_the_adapted_weights_carry_the_update_and_the_rest_is_copied(merged):
    from gguf import GGUFReader
    from gguf.quants import dequantize

    _, path = merged
    base, out = GGUFReader(str(bundled_chat_gguf())), GGUFReader(str(path))
    assert [t.name for t in out.tensors] == [t.name for t in base.tensors]
    assert {f for f in out.fields if not f.startswith("GGUF.")} == {f for f in base.fields if not f.startswith("GGUF.")}
    updates = lora_updates(ADAPTER)
    old = {t.name: t for t in base.tensors}
    for tensor in out.tensors:
        before = old[tensor.name]
        if tensor.name not in updates:
            assert tensor.tensor_type == before.tensor_type and np.array_equal(tensor.data, before.data)
            continue
        if tensor.name != "blk.3.attn_q.weight":
            continue
        want = dequantize(np.asarray(before.data), before.tensor_type) + updates[tensor.name]
        got = dequantize(np.asarray(tensor.data), tensor.tensor_type)
        assert tensor.tensor_type.name == "Q8_0"
        assert np.abs(got - want).max() <= np.abs(want).max() / 100  # 8-bit rounding only
        change, update = got - dequantize(np.asarray(before.data), before.tensor_type), updates[tensor.name]
        assert abs((change * update).sum() / (update * update).sum() - 1) < 0.05  # the update is there, unshrunk


def test_a_second_use_reads_the_cache_and_a_file_that_is_no_adapter_is_refused(merged, tmp_path):
    cache, path = merged
    stamp = path.stat().st_mtime_ns
    assert merged_model(bundled_chat_gguf(), ADAPTER, cache) == path and path.stat().st_mtime_ns == stamp
    assert [p.name for p in cache.iterdir()] == [path.name]  # no temporary file left behind
    with pytest.raises(AdapterMergeError, match="not a GGUF LoRA adapter"):
        merged_model(bundled_chat_gguf(), bundled_chat_gguf(), tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_without_a_writable_cache_the_backend_applies_the_adapter_per_token(tmp_path, monkeypatch, caplog):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (M3AGENT_SKIP_LLAMACPP=1)")
    from m3agent import factory
    from m3agent.config import ChatConfig

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("M3AGENT_CACHE", str(blocker))
    chat = factory.build_chat(ChatConfig(backend="llamacpp", adapter="bundled", threads=1))
    assert chat.merged == "" and chat.adapter.endswith("adapter.gguf")
    assert "applying the adapter per token" in caplog.text
