"""Search results in a seeded random order while training (``train control --clip-order shuffled``)."""

import re

import pytest

from m3agent import factory
from m3agent.config import load_config
from m3agent.memory.text_sources import TextRecord
from m3agent.train.clip_order import ShuffledClips, shown_in_order

pytestmark = pytest.mark.models

RECORDS = [TextRecord("1", "Hello, my name is Ines. I left my umbrella in the red locker.", "00:05", "speaker_1", "0"),
           TextRecord("2", "My umbrella is green and I bought it in the harbour.", "00:40", "speaker_2", "1"),
           TextRecord("3", "I moved my umbrella from the locker to the car trunk.", "01:10", "speaker_1", "2"),
           TextRecord("4", "Nobody else has an umbrella like mine.", "01:40", "speaker_1", "3")]


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    graph = factory.open_memory(tmp_path_factory.mktemp("order") / "w.db", load_config(), create=True)
    graph.remember("world_a", RECORDS)
    yield graph
    graph.close()


def _ids(memory, query="Where is the umbrella?"):
    return [c.id for c in memory.search(query, video=memory.resolve_video("world_a").id).clips]


def test_shuffled_results_are_the_same_clips_in_an_order_fixed_by_seed_and_search(graph):
    plain = _ids(graph)
    assert len(plain) >= 2
    orders = {seed: _ids(ShuffledClips(graph, seed)) for seed in range(8)}
    assert all(sorted(order) == sorted(plain) for order in orders.values())
    assert any(order != plain for order in orders.values())  # 8 seeds never all keep the search's order
    assert _ids(ShuffledClips(graph, 3)) == orders[3]  # a resumed run shows what the first showed


def test_a_training_environment_shows_the_shuffled_order_and_everything_else_is_the_memory(graph):
    config = load_config()
    seed = next(s for s in range(8) if _ids(ShuffledClips(graph, s)) != _ids(graph))
    task = {"question": "Where is the umbrella?", "video": "world_a"}
    prompts = {order: factory.build_env(config, "control", memory=shown_in_order(graph, order, seed)).reset(task)
               for order in ("search", "shuffled")}
    shown = {order: [int(n) for n in re.findall(r"CLIP_(\d+) \(", "\n".join(m["content"] for m in prompt))]
             for order, prompt in prompts.items()}
    assert shown["search"] == _ids(graph) and shown["shuffled"] == _ids(ShuffledClips(graph, seed))
    assert ShuffledClips(graph, seed).characters(graph.resolve_video("world_a").id) is not None
    assert shown_in_order(graph, "search", seed) is graph
    with pytest.raises(ValueError, match="unknown clip order"):
        shown_in_order(graph, "video", seed)


def test_a_task_that_hides_its_evidence_never_sees_those_clips(graph):
    from m3agent.train.clip_order import HiddenClips

    video = graph.resolve_video("world_a").id
    plain = _ids(graph)
    hidden = HiddenClips(graph, [plain[0]])
    assert plain[0] not in _ids(hidden) and set(_ids(hidden)) <= set(plain)
    lines = hidden.search("umbrella", video=video, lines=10).lines
    assert lines and all(x["clip"] != plain[0] for x in lines)
    config = load_config()
    task = {"question": "Where is the umbrella?", "video": "world_a"}
    for order in ("search", "shuffled"):
        prompt = factory.build_env(config, "control", memory=shown_in_order(graph, order, 1, [plain[0]])).reset(task)
        shown = [int(n) for n in re.findall(r"CLIP_(\d+) \(", "\n".join(m["content"] for m in prompt))]
        assert shown and plain[0] not in shown
