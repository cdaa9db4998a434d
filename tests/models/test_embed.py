"""The bundled MiniLM embedder, loaded for real from its package with the hub switched off."""

import numpy as np
import pytest

from m3agent.config import EmbedderConfig
from m3agent.factory import build_embedder

pytestmark = pytest.mark.models


@pytest.fixture(scope="module")
def minilm():
    return build_embedder(EmbedderConfig())


def test_bundled_minilm_loads_offline(minilm):
    assert minilm.name == "all-MiniLM-L6-v2" and minilm.dim == 384
    vecs = minilm.embed(["A man plays the guitar.", "Someone is playing a guitar.", "The stock market fell."])
    assert vecs.dtype == np.float32 and np.allclose(np.linalg.norm(vecs, axis=1), 1, atol=1e-5)
    assert vecs[0] @ vecs[1] > 0.6 > vecs[0] @ vecs[2]
    assert minilm.embed([]).shape == (0, 384)


def test_semantic_search_with_real_embeddings(minilm, tmp_path):
    from m3agent.memory import MemoryGraph

    graph = MemoryGraph.open(tmp_path / "real.db", embedder=minilm)
    v = graph.add_video("real")
    lines = ["<face_0> chops onions in the kitchen", "<face_0> drives a red car to work",
             "<face_0> reads a novel in bed", "<face_0> feeds the dog in the garden"]
    for clip, line in enumerate(lines):
        with graph.clip(v, clip, clip * 30, clip * 30 + 30) as b:
            if clip == 0:
                b.face([np.ones(128)])
            b.episodic(line)
    assert graph.search("Who was cooking food?", top_k=1, threshold=0.2).clips[0].id == 0
    assert graph.search("what vehicle did they use to commute", top_k=1, threshold=0.2).clips[0].id == 1
    assert graph.search("Qui nourrit le chien ?", top_k=1, threshold=0.0).mode == "clips"
    graph.close()
    reopened = MemoryGraph.open(tmp_path / "real.db", embedder=minilm)
    assert reopened.search("pet animal", top_k=1, threshold=0.1).clips[0].id == 3
    reopened.close()


def test_cli_builds_the_recorded_embedder(tmp_path, minilm, capsys):
    from m3agent.cli import main
    from m3agent.memory import MemoryGraph

    graph = MemoryGraph.open(tmp_path / "cli.db", embedder=minilm)
    v = graph.add_video("v")
    with graph.clip(v, 0, 0, 30) as b:
        b.episodic("a cat sleeps on the warm windowsill")
    graph.close()
    assert main(["search", str(tmp_path / "cli.db"), "kitten napping", "--json", "--threshold", "0.3"]) == 0
    assert '"id": 0' in capsys.readouterr().out


def test_a_query_is_encoded_on_one_thread_and_a_batch_on_all(minilm, monkeypatch):
    """Waking torch's thread pool costs more than it saves on one short text (much more on a busy machine):
    queries go on one thread, the count is restored after, even on an error, and the vectors are the same."""
    import torch

    before = torch.get_num_threads()
    seen = []
    encode = minilm._model.encode
    monkeypatch.setattr(minilm._model, "encode", lambda *a, **k: seen.append(torch.get_num_threads()) or encode(*a, **k))
    query = "Who opened the fridge in the kitchen?"
    one = minilm.embed([query])
    batch = [query] + [f"line {i} of a clip" for i in range(minilm.single_thread_texts)]
    many = minilm.embed(batch)
    assert seen == [1, before] and torch.get_num_threads() == before
    monkeypatch.setattr(minilm, "single_thread_texts", 0)  # the same query on all threads
    alone = minilm.embed([query])
    assert seen[-1] == before and np.abs(alone - one).max() < 1e-6  # the same up to float rounding order
    assert np.abs(many[0] - one[0]).max() < 1e-5

    def fail(*a, **k):
        assert torch.get_num_threads() == 1
        raise RuntimeError("boom")

    monkeypatch.setattr(minilm, "single_thread_texts", 8)
    monkeypatch.setattr(minilm._model, "encode", fail)
    with pytest.raises(RuntimeError, match="boom"):
        minilm.embed([query])
    assert torch.get_num_threads() == before


def test_queries_from_several_threads_leave_every_thread_its_count():
    """Queries from several threads (the app) overlap: each block sees one thread, and each thread (the main
    one, whose count is the default of the others) gets its own count back."""
    import threading

    import torch

    from m3agent.models.torch_threads import one_torch_thread

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    seen, after = [], []

    def queries():
        mine = torch.get_num_threads()
        for _ in range(50):
            with one_torch_thread():
                seen.append(torch.get_num_threads())
            after.append(torch.get_num_threads() == mine)

    try:
        workers = [threading.Thread(target=queries) for _ in range(3)]
        for worker in workers:
            worker.start()
        queries()
        for worker in workers:
            worker.join()
        assert set(seen) == {1} and len(seen) == 200 and all(after) and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
