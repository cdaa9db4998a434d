"""The chat contract every backend shares: retries, batches, message conversion, building by name."""

import json
import sys
import types

import pytest

from m3agent.config import ChatConfig
from m3agent.factory import build_chat, chat_backend
from m3agent.models.llm.base import (
    ChatError,
    ChatUnavailableError,
    ContextOverflowError,
    TransientChatError,
    image_part,
    text_only,
    text_part,
)
from m3agent.models.llm.scripted import ScriptedChat

HELLO = [{"role": "user", "content": "hello"}]


def test_transient_errors_are_retried_with_backoff_then_given_up(monkeypatch):
    sleeps = []
    monkeypatch.setattr("m3agent.models.llm.base.time.sleep", sleeps.append)
    chat = ScriptedChat([TransientChatError("503"), TransientChatError("503"), "ok"], retries=2, backoff=0.5)
    reply = chat.chat(HELLO)
    assert reply.text == "ok" and len(chat.calls) == 3 and sleeps == [0.5, 1.0]
    assert reply.seconds >= 0
    down = ScriptedChat([TransientChatError("refused")], retries=1)
    with pytest.raises(ChatError, match="gave up after 2 attempts: refused"):
        down.chat(HELLO)


def test_permanent_errors_are_not_retried():
    for error in (ChatError("401 bad key"), ContextOverflowError("too long")):
        chat = ScriptedChat([error], retries=3)
        with pytest.raises(type(error)):
            chat.chat(HELLO)
        assert len(chat.calls) == 1


def test_batch_keeps_order_and_runs_concurrently_when_allowed():
    chat = ScriptedChat(lambda messages: messages[-1]["content"].upper(), concurrency=4)
    conversations = [[{"role": "user", "content": f"q{i}"}] for i in range(10)]
    assert [r.text for r in chat.batch(conversations)] == [f"Q{i}" for i in range(10)]
    assert chat.batch([]) == []


def test_text_only_drops_images_and_joins_text():
    messages = [{"role": "system", "content": "be brief"},
                {"role": "user", "content": [text_part("look:"), image_part(b"\xff\xd8jpeg"), text_part("what is it?")]}]
    assert text_only(messages) == [{"role": "system", "content": "be brief"},
                                   {"role": "user", "content": "look:\nwhat is it?"}]
    assert image_part(b"ab")["image_url"]["url"] == "data:image/jpeg;base64,YWI="


def test_build_chat_by_name_and_the_embedded_default(tmp_path, monkeypatch):
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(["Action: [Answer]\nContent: 42"]))
    chat = build_chat(ChatConfig(backend="scripted", model=str(replies), retries=0))
    assert isinstance(chat, ScriptedChat) and chat.chat(HELLO).text.endswith("42") and chat.retries == 0
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llama_cpp" else real(name, *a))
    assert chat_backend("auto") == "transformers"  # no llama-cpp-python: the pure-Python path
    assert chat_backend("openai") == "openai"


def test_openai_backend_needs_a_server_or_a_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ChatUnavailableError, match="base_url"):
        build_chat(ChatConfig(backend="openai"))
    # a server that is not there: listing its models fails after the retries, with the address in the message
    with pytest.raises(ChatUnavailableError, match="127.0.0.1:9"):
        build_chat(ChatConfig(backend="openai", base_url="http://127.0.0.1:9/v1", retries=0, timeout=2))


def test_vllm_backend_without_vllm_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # import fails, as on a machine without vLLM
    with pytest.raises(ChatUnavailableError, match="vllm serve"):
        build_chat(ChatConfig(backend="vllm", model="Qwen/Qwen3-8B"))


def test_vllm_backend_maps_requests_and_outputs(monkeypatch):
    """vLLM needs a GPU and is not installed here: this checks our side of its API (LLM.chat with
    SamplingParams, RequestOutput fields) against a stand-in module with the same shapes."""
    seen = {}

    class SamplingParams:
        def __init__(self, **kwargs):
            seen["sampling"] = kwargs

    class LLM:
        def __init__(self, **kwargs):
            seen["engine"] = kwargs

        def chat(self, conversations, sampling, use_tqdm=False):
            if any("x" * 50 in m["content"] for c in conversations for m in c):
                raise ValueError("The decoder prompt (length 9000) is longer than the maximum model length of 8192.")
            seen["conversations"] = conversations
            out = types.SimpleNamespace
            return [out(prompt_token_ids=[1] * (7 + i), outputs=[out(text=f"reply {i}", token_ids=[5, 6],
                                                                       finish_reason="length" if i else "stop")])
                    for i in range(len(conversations))]

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(LLM=LLM, SamplingParams=SamplingParams))
    chat = build_chat(ChatConfig(backend="vllm", model="/models/qwen", context=4096, tensor_parallel=2))
    assert seen["engine"]["model"] == "/models/qwen" and seen["engine"]["max_model_len"] == 4096
    assert seen["engine"]["tensor_parallel_size"] == 2
    replies = chat.batch([HELLO, HELLO], max_tokens=12, stop=["\nQuestion:"])
    assert [r.text for r in replies] == ["reply 0", "reply 1"] and len(seen["conversations"]) == 2
    assert replies[1].prompt_tokens == 8 and replies[1].completion_tokens == 2 and replies[1].finish_reason == "length"
    assert seen["sampling"]["max_tokens"] == 12 and seen["sampling"]["stop"] == ["\nQuestion:"]
    with pytest.raises(ContextOverflowError):
        chat.chat([{"role": "user", "content": "x" * 60}])


def test_looping_replies_are_cut_to_one_copy():
    from m3agent.models.llm.base import looping_tail

    text = "Hi, my name is David. " + "I'm a chef. " * 6
    assert text[: looping_tail(text)] == "Hi, my name is David. I'm a chef. "
    for fine in ("The answer is the garage.", "1, 2, 3, 4, 5, 6, 7, 8, 9, 10", "ha" * 3, ""):
        assert looping_tail(fine) is None


def test_openai_sends_a_reply_grammar_only_in_the_configured_field(monkeypatch):
    """A plain OpenAI endpoint rejects fields it does not know: the grammar goes out only when ``grammar_field``
    names one (llama.cpp's server reads ``grammar``), and never with ``grammar`` off."""
    from m3agent.control.text import REPLY_FORMAT
    from m3agent.prompts import load_grammar

    sent = []

    def create(**request):
        sent.append(request)
        reply = types.SimpleNamespace(message=types.SimpleNamespace(content="Action: [Answer]\nContent: x"),
                                      finish_reason="stop")
        return types.SimpleNamespace(choices=[reply], usage=None)

    cases = {"": None, "grammar": load_grammar(REPLY_FORMAT)}
    for field, expected in cases.items():
        for on in (True, False):
            chat = build_chat(ChatConfig(backend="openai", base_url="http://127.0.0.1:9/v1", model="m",
                                         grammar_field=field, grammar=on))
            monkeypatch.setattr(chat.client.chat.completions, "create", create)
            chat.chat(HELLO, format=REPLY_FORMAT)
            chat.chat(HELLO)  # free text: no grammar whatever the settings
            wanted = {field: expected} if expected and on else None
            assert sent[-2].get("extra_body") == wanted and "extra_body" not in sent[-1]
