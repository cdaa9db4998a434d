"""The embedded default chat model, loaded for real: SmolLM2-135M (GGUF) through llama.cpp and transformers.

The model is tiny and often wrong, so these tests check plumbing and limits, never exact text."""

import pytest

from m3agent.config import ChatConfig, ControlConfig
from m3agent.control import Controller, Question
from m3agent.control.text import REPLY_FORMAT
from m3agent.factory import build_chat
from m3agent.models.llm.base import ChatError, ChatUnavailableError, ContextOverflowError
from m3agent.prompts import load_grammar

pytestmark = pytest.mark.models

CAPITAL = [{"role": "system", "content": "You are a helpful assistant."},
           {"role": "user", "content": "What is the capital of France? Answer in one word."}]
STORY = [{"role": "user", "content": "Write a long story about a dragon who learns to cook."}]


@pytest.fixture(scope="module")
def llamacpp():
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (M3AGENT_SKIP_LLAMACPP=1)")
    return build_chat(ChatConfig(backend="llamacpp", context=2048, threads=1))  # 1: fastest on a shared machine


def test_llamacpp_answers_counts_tokens_and_obeys_limits(llamacpp):
    reply = llamacpp.chat(CAPITAL, max_tokens=20)
    assert "paris" in reply.text.lower()  # the one fact even a 135M model gets right
    assert reply.prompt_tokens > 10 and 0 < reply.completion_tokens <= 20 and reply.seconds > 0
    short = llamacpp.chat(STORY, max_tokens=8)
    assert short.completion_tokens <= 8 and short.finish_reason == "length"
    stopped = llamacpp.chat([{"role": "user", "content": "Count from 1 to 20 separated by commas."}],
                            max_tokens=80, stop=["7"])
    assert "7" not in stopped.text and "8" not in stopped.text


def test_llamacpp_timeout_keeps_the_partial_reply(llamacpp):
    llamacpp.timeout = 0.2
    try:
        reply = llamacpp.chat(STORY, max_tokens=500)
    finally:
        llamacpp.timeout = 120.0
    assert reply.finish_reason == "timeout" and reply.completion_tokens < 500


def test_llamacpp_reports_context_overflow(llamacpp):
    with pytest.raises(ContextOverflowError):
        llamacpp.chat([{"role": "user", "content": "memory " * 3000}], max_tokens=4)


CONTROL_QUESTIONS = ["Who opens the fridge in the kitchen?", "Who cooks pasta in the kitchen?",
                     "What does Bob play on the sofa?", "Is the fridge full?"]


def test_llamacpp_control_replies_under_the_grammar_are_all_well_formed(llamacpp, kitchen):
    """The control loop with the real model, grammar off then on: the rate of replies the parser reads as an
    action is reported (run with -s); under the grammar it must be every reply."""
    rates = {}
    try:
        for grammar in (False, True):
            llamacpp.grammar = grammar
            controller = Controller(kitchen, llamacpp, ControlConfig(max_rounds=2, max_tokens=40))
            answers = controller.answer_many([Question(q) for q in CONTROL_QUESTIONS])
            rounds = [r for a in answers for r in a.rounds if r.by == "model"]
            assert rounds and all(a.error is None for a in answers)
            rates[grammar] = sum(not r.malformed for r in rounds), len(rounds)
    finally:
        llamacpp.grammar = True
    print(f"\nwell-formed control replies, SmolLM2-135M: without grammar {rates[False][0]}/{rates[False][1]}, "
          f"with grammar {rates[True][0]}/{rates[True][1]}")
    assert rates[True][0] == rates[True][1]


def test_the_control_grammar_compiles_and_a_broken_one_is_refused(llamacpp):
    from m3agent.models.llm.llamacpp import grammar_compiles

    assert grammar_compiles(llamacpp.llm, load_grammar(REPLY_FORMAT))
    assert not grammar_compiles(llamacpp.llm, "root ::= (")
    assert llamacpp.grammar_for(REPLY_FORMAT) is llamacpp.grammar_for(REPLY_FORMAT)  # compiled once
    with pytest.raises(ChatError, match="no grammar"):
        llamacpp.chat(CAPITAL, format="no_such_format")


@pytest.mark.parametrize("reply,admitted", [
    ("Action: [Answer]\nContent: Paris.", True), ("Action: [Search]\nContent:\nwho is Olga", True),
    ("Action: [Answer]\nContent: 14:55.", True), ("Action: [Answer]\nContent: 100 degrees Celsius.", True),
    ("Action: [Answer]\nContent: 4 + 3 = 7 plates.", True),
    ("Action: [Answer]\nContent: 1. Paris", False), ("Action: [Answer]\nContent: 1", False),
    ("Action: [Answer]\nContent: 3) the key", False), ("Action: [Answer]\nContent: [Answer] or [Search]", False),
    ("Action: [Answer]\nContent: Paris.\nQuestion: more", False), ("Action: Answer\nContent: Paris.", False)])
def test_the_control_grammar_admits_answers_that_start_with_a_number_but_not_a_list(llamacpp, reply, admitted):
    """A trained adapter answers "14:55." to a timetable question: held to letters first, it wrote no answer."""
    assert grammar_admits(llamacpp.llm, load_grammar(REPLY_FORMAT), reply) is admitted


def grammar_admits(llm, grammar: str, reply: str) -> bool:
    """Whether llama.cpp, decoding under ``grammar``, could write ``reply`` and stop: each of its tokens (then the
    end) is offered to the grammar's sampler alone, and must keep a finite logit."""
    import ctypes

    import llama_cpp

    sampler = llama_cpp.llama_sampler_init_grammar(llama_cpp.llama_model_get_vocab(llm.model), grammar.encode(), b"root")
    try:
        for token in llm.tokenize(reply.encode(), add_bos=False, special=False) + [llm.token_eos()]:
            data = (llama_cpp.llama_token_data * 1)(llama_cpp.llama_token_data(token, 0.0, 0.0))
            llama_cpp.llama_sampler_apply(sampler, ctypes.byref(llama_cpp.llama_token_data_array(data, 1, -1, False)))
            if data[0].logit == float("-inf"):
                return False
            llama_cpp.llama_sampler_accept(sampler, token)
        return True
    finally:
        llama_cpp.llama_sampler_free(sampler)


def test_llamacpp_missing_model_file_is_a_clear_error(tmp_path):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (M3AGENT_SKIP_LLAMACPP=1)")
    with pytest.raises(ChatUnavailableError, match="missing.gguf"):
        build_chat(ChatConfig(backend="llamacpp", model=str(tmp_path / "missing.gguf")))


def test_transformers_loads_the_gguf_and_batches():
    chat = build_chat(ChatConfig(backend="transformers", context=2048))
    replies = chat.batch([CAPITAL, STORY], max_tokens=12, format=REPLY_FORMAT)  # no grammar engine: ignored
    assert "paris" in replies[0].text.lower()
    assert replies[1].completion_tokens == 12 and replies[1].finish_reason == "length"
    assert replies[0].prompt_tokens > 10 and replies[1].prompt_tokens > 5  # padding is not counted
    with pytest.raises(ContextOverflowError):
        chat.chat([{"role": "user", "content": "memory " * 3000}], max_tokens=4)
