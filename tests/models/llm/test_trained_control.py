"""The shipped control model (the bundled SmolLM2 with the adapter ``m3agent train control`` trained), loaded by both
local backends, answers from what its search finds on a memory it never saw."""

import dataclasses

import pytest

from m3agent import factory
from m3agent.config import load_config
from m3agent.control import Question
from m3agent.memory.text_sources import TextRecord

pytestmark = pytest.mark.models

#: a small memory in the lines the default memorizer writes, about people and things no training world has
RECORDS = [
    TextRecord("1", 'At 00:03 <character_7> says: "Hi, I am Quentin. I keep my kayak behind the boathouse."', session="0"),
    TextRecord("1n", "<character_7>'s name is Quentin", session="0"),
    TextRecord("2", 'At 00:20 <character_8> says: "My name is Marisol. I teach chemistry at the night school."',
               session="0"),
    TextRecord("2n", "<character_8>'s name is Marisol", session="0"),
    TextRecord("3", 'At 00:41 <character_7> says: "The ferry to the island leaves at noon."', session="1"),
]
QUESTIONS = [("Where does Quentin keep his kayak?", "boathouse"), ("What does Marisol teach?", "chemistry")]


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    config = load_config(None, {}, [])
    graph = factory.open_memory(tmp_path_factory.mktemp("trained") / "m.db", config, create=True)
    graph.remember("harbour", RECORDS)
    yield config, graph
    graph.close()


@pytest.mark.parametrize("backend,merge", [("llamacpp", True), ("llamacpp", False), ("transformers", True)])
def test_the_shipped_control_model_answers_from_its_notes_in_both_backends(memory, backend, merge, tmp_path,
                                                                           monkeypatch):
    if backend == "llamacpp":
        pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (M3AGENT_SKIP_LLAMACPP=1)")
    monkeypatch.setenv("M3AGENT_CACHE", str(tmp_path))  # a first use: the merged model is built here
    config, graph = memory
    chat = dataclasses.replace(config.control.chat, backend=backend, threads=1, merge_adapter=merge)
    model = factory.build_chat(chat)
    assert model.adapter.endswith("adapter.gguf" if backend == "llamacpp" else "adapter")  # the shipped one
    if backend == "llamacpp":  # merged into a cached copy of the weights (the default), or applied per token
        assert bool(model.merged) == merge and (not merge or model.merged.startswith(str(tmp_path)))
    controller = factory.build_controller(graph, config, model)
    answers = controller.answer_many([Question(q) for q, _ in QUESTIONS])
    for (question, word), answer in zip(QUESTIONS, answers):
        assert word in answer.answer.lower(), (question, answer.answer)
        assert len(answer.rounds) <= config.control.max_rounds + 1
