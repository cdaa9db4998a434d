"""The composition root: objects come out of config one way, and a DB reopens with the embedder it was written with."""

import pytest

from m3agent import factory
from m3agent.config import load_config
from m3agent.control import Question
from m3agent.memory import EmbedderMismatchError
from m3agent.memory.visibility import NEVER, node_visible, visible


def test_a_db_reopens_with_the_embedder_it_was_written_with(kitchen, db_path):
    kitchen.close()
    with factory.open_memory(db_path, load_config(), readonly=True) as graph:  # default config: MiniLM
        assert graph.embedder_required().name == "hashing-512"  # ... but the DB says hashing-512
        assert graph.search("plays guitar on the sofa", threshold=0.1).clips[0].id == 1
    chosen = load_config(overrides=["embedder.backend=hashing", "embedder.model=64"])
    with factory.open_memory(db_path, chosen, readonly=True) as graph:  # a user's explicit choice is never mixed in
        with pytest.raises(EmbedderMismatchError, match="hashing-512"):
            graph.search("guitar")


def test_memorizers_get_what_they_require():
    grounded = factory.build_memorizer(load_config().memorize)
    assert grounded.name == "grounded"
    chat = factory.build_memorizer(load_config(overrides=["memorize.memorizer=chat",
                                                          "memorize.chat.backend=scripted"]).memorize)
    assert chat.name == "chat" and chat.chat.name == "scripted"  # the factory built its chat model


def test_controller_and_chat_from_config(kitchen):
    config = load_config(overrides=["control.chat.backend=scripted", "control.max_rounds=2"])
    controller = factory.build_controller(kitchen, config)
    assert list(controller.step.rules) == ["correction", "quote"]  # the rules around the model, on by default
    answer = controller.answer(Question("Who plays guitar?"))
    assert controller.chat.name == "scripted" and answer.rounds[-1].replaced == "(scripted)"  # no note says it
    bare = load_config(overrides=["control.chat.backend=scripted", "control.hold_corrections=false",
                                  "control.quote_invented=false"])
    controller = factory.build_controller(kitchen, bare)
    assert controller.step.rules == {} and controller.answer(Question("Who plays guitar?")).answer == "(scripted)"


def test_the_as_of_rule_is_one_rule_for_nodes_and_columns(kitchen):
    import numpy as np

    nodes = kitchen.store.text_nodes(kitchen.video)
    clip = np.array([n.clip for n in nodes])
    start = np.array([n.clip if n.valid_from is None else n.valid_from for n in nodes])
    dead = np.array([NEVER if n.invalidated_at is None else n.invalidated_at for n in nodes])
    for before in (None, 0, 1, 2, 3):
        assert visible(clip, start, dead, before).tolist() == [node_visible(n, before) for n in nodes]
    fridge = next(n for n in nodes if n.id == kitchen.ids["fridge_full"])
    assert node_visible(fridge, 1) and not node_visible(fridge, 2) and not node_visible(fridge, None)

