"""The openai backend against a real OpenAI-compatible server: llama.cpp's, started here on loopback
with the bundled GGUF; then the whole control loop through it."""

import pytest

from m3agent.config import ChatConfig, ControlConfig
from m3agent.control import Controller, Question
from m3agent.factory import build_chat
from m3agent.models.llm.base import ChatError, ContextOverflowError
from m3agent.testing.llama_server import llama_server

pytestmark = pytest.mark.models


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] is not installed")
    with llama_server(tmp_path_factory.mktemp("llama-server") / "server.log", context=2048) as url:
        yield url


@pytest.fixture
def client(server):
    return build_chat(ChatConfig(backend="openai", base_url=server, concurrency=3, timeout=60, retries=1))


def test_chat_through_the_server(client):
    assert client.model  # discovered from /v1/models
    reply = client.chat([{"role": "user", "content": "What is the capital of France? Answer in one word."}],
                        max_tokens=16)
    assert "paris" in reply.text.lower()
    assert reply.prompt_tokens > 5 and 0 < reply.completion_tokens <= 16 and reply.seconds > 0
    short = client.chat([{"role": "user", "content": "Write a long poem about the sea."}], max_tokens=5)
    assert short.completion_tokens <= 5 and short.finish_reason == "length"


def test_concurrent_batch_comes_back_whole_and_in_order(client):
    questions = ["What is 2 plus 2?", "Name a colour.", "Name an animal."]
    replies = client.batch([[{"role": "user", "content": q}] for q in questions], max_tokens=12)
    assert len(replies) == 3 and all(r.text.strip() and r.completion_tokens > 0 for r in replies)


def test_server_errors_map_to_the_contract(server):
    chat = build_chat(ChatConfig(backend="openai", base_url=server, retries=0, timeout=60))
    with pytest.raises(ContextOverflowError):
        chat.chat([{"role": "user", "content": "memory " * 3000}], max_tokens=4)
    hurried = build_chat(ChatConfig(backend="openai", base_url=server, retries=1, timeout=0.01))
    with pytest.raises(ChatError, match="gave up after 2 attempts"):
        hurried.chat([{"role": "user", "content": "Write a long poem about the sea."}], max_tokens=200)


def test_control_loop_through_the_server(client, kitchen):
    answers = Controller(kitchen, client, ControlConfig(max_rounds=2, max_tokens=48)).answer_many(
        [Question("Who opens the fridge in the kitchen?"), Question("Who cooks pasta in the kitchen?", before_clip=3)])
    for answer in answers:
        assert answer.error is None and answer.answer  # a tiny model: some answer, not a right one
        assert 2 <= len(answer.rounds) <= 3 and answer.rounds[0].by == "seed" and answer.rounds[-1].action == "answer"
        assert answer.rounds[0].clips and answer.tokens > 0
        assert "<character_" not in answer.answer and "<face_" not in answer.answer


def test_a_server_that_reads_a_grammar_gets_the_control_format(server):
    """llama.cpp's server takes a GBNF ``grammar`` field: with ``grammar_field`` set, replies keep the format."""
    from m3agent.control.text import REPLY_FORMAT, parse_action

    chat = build_chat(ChatConfig(backend="openai", base_url=server, grammar_field="grammar", timeout=120, retries=1))
    messages = [{"role": "user", "content": "Who opens the fridge? Reply as Action: [Answer] or [Search], then Content:"}]
    reply = chat.chat(messages, max_tokens=40, format=REPLY_FORMAT)
    assert reply.text.startswith("Action: [") and not parse_action(reply.text)[2]
