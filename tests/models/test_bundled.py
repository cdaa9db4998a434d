"""The shipped control adapter: which adapter a local backend applies, and where the default asks for it."""

import pytest

from m3agent.config import BUNDLED_ADAPTER, ChatConfig, load_config
from m3agent.memory_tools.policy import policy_chat
from m3agent.models import bundled
from m3agent.models.bundled import CONTROL_ADAPTER_DIR, ModelNotFoundError, chat_adapter


def test_the_default_control_model_is_the_bundled_model_with_the_shipped_adapter():
    config = load_config(None, {}, [])
    assert config.control.chat.adapter == BUNDLED_ADAPTER and not config.control.chat.model
    assert ChatConfig().adapter == ""  # other chats (judge, memorizer, users) are the models as they are
    untrained = load_config(None, {}, ["control.chat.adapter="])
    assert untrained.control.chat.adapter == ""


def test_the_shipped_adapter_is_in_the_package_in_both_forms_and_small():
    gguf, peft = chat_adapter(BUNDLED_ADAPTER, "", "gguf"), chat_adapter(BUNDLED_ADAPTER, "", "peft")
    assert gguf.endswith("adapter.gguf") and (CONTROL_ADAPTER_DIR / "adapter.gguf").is_file()
    assert (CONTROL_ADAPTER_DIR / "adapter" / "adapter_config.json").is_file() and peft.endswith("adapter")
    size = sum(p.stat().st_size for p in CONTROL_ADAPTER_DIR.rglob("*") if p.is_file())
    assert size <= 20 * 2**20
    assert (CONTROL_ADAPTER_DIR / "MODEL_CARD.md").is_file()


def test_the_shipped_adapter_is_applied_to_the_bundled_model_only():
    assert chat_adapter(BUNDLED_ADAPTER, "/models/other.gguf", "gguf") == ""
    assert chat_adapter("", "", "gguf") == ""
    assert chat_adapter("/runs/mine/adapter.gguf", "", "gguf") == "/runs/mine/adapter.gguf"


def test_a_missing_shipped_adapter_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(bundled, "CONTROL_ADAPTER_DIR", tmp_path)
    with pytest.raises(ModelNotFoundError, match="control.chat.adapter="):
        chat_adapter(BUNDLED_ADAPTER, "", "gguf")


def test_the_memory_build_policy_does_not_take_the_answering_adapter():
    config = load_config(None, {}, [])
    assert policy_chat(config).adapter == "" and policy_chat(config).backend == config.control.chat.backend
    mine = load_config(None, {}, ["control.chat.adapter=/runs/mine/adapter.gguf"])
    assert policy_chat(mine).adapter == "/runs/mine/adapter.gguf"  # a user's own adapter is theirs to keep
