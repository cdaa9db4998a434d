"""Importing M3-Agent VideoGraph pickles through the restricted unpickler."""

import base64
import pickle
import sys
import types

import numpy as np
import pytest

from m3agent.memory import MemoryGraph
from m3agent.memory.m3_import import UnsafePickleError, import_m3_graph, load_m3_pickle


def _m3_classes():
    """Classes with M3-Agent's module path and field names, used only to write the pickle."""
    module = types.ModuleType("mmagent.videograph")

    class VideoGraph:
        class Node:
            def __init__(self, node_id, node_type):
                self.id, self.type, self.embeddings, self.metadata = node_id, node_type, [], {}

    VideoGraph.__module__ = VideoGraph.Node.__module__ = "mmagent.videograph"
    VideoGraph.__qualname__, VideoGraph.Node.__qualname__ = "VideoGraph", "VideoGraph.Node"
    module.VideoGraph = VideoGraph
    return module, VideoGraph


@pytest.fixture
def m3_pickle(tmp_path, monkeypatch):
    module, VideoGraph = _m3_classes()
    monkeypatch.setitem(sys.modules, "mmagent", types.ModuleType("mmagent"))
    monkeypatch.setitem(sys.modules, "mmagent.videograph", module)
    g = VideoGraph()
    g.nodes, g.edges, g.text_nodes, g.text_nodes_by_clip, g.event_sequence_by_clip = {}, {}, [], {}, {}
    rng = np.random.default_rng(0)

    def node(i, kind, **meta):
        n = VideoGraph.Node(i, kind)
        n.metadata = meta
        g.nodes[i] = n
        return n

    face = node(0, "img", contents=[base64.b64encode(b"\xff\xd8M3CROP").decode()])
    face.embeddings = [rng.standard_normal(512).astype(np.float32) for _ in range(2)]
    voice = node(1, "voice", contents=["hello there"])
    voice.embeddings = [rng.standard_normal(256)]
    texts = [(2, "episodic", 0, "<face_0> waves at the camera"), (3, "episodic", 0, "<voice_1> says hello there"),
             (4, "semantic", 0, "Equivalence: <face_0>, <voice_1>"), (5, "episodic", 1, "<face_0> leaves the room"),
             (6, "semantic", 1, "<face_0>'s name is Eve")]
    for i, kind, clip, text in texts:
        n = node(i, kind, contents=[text], timestamp=clip)
        n.embeddings = [rng.standard_normal(3072)]
        g.text_nodes.append(i)
        g.text_nodes_by_clip.setdefault(clip, []).append(i)
        for ent in (0, 1):
            if f"_{ent}>" in text:
                g.edges[(i, ent)] = g.edges[(ent, i)] = 1.0
    g.next_node_id = 7
    path = tmp_path / "m3.pkl"
    path.write_bytes(pickle.dumps(g))
    return path


def test_import_m3_pickle(m3_pickle, tmp_path, embedder, monkeypatch):
    monkeypatch.delitem(sys.modules, "mmagent.videograph")  # the loader must not need M3-Agent's code
    source = load_m3_pickle(m3_pickle)
    graph = MemoryGraph.open(tmp_path / "imported.db", embedder=embedder)
    stats = import_m3_graph(source, graph, "m3video")
    assert stats == {"video": "m3video", "clips": 2, "faces": 1, "voices": 1, "lines": 5, "skipped_clips": 0}
    data = graph.export()
    kinds = sorted(n["kind"] for n in data["nodes"])
    assert kinds == ["episodic", "episodic", "episodic", "face", "semantic", "semantic", "voice"]
    assert list(data["characters"].values()) == [["face_0", "voice_1"]]
    assert data["names"] == {"character_0": "Eve"}
    assert graph.store.crops(0)[0][2] == b"\xff\xd8M3CROP"
    hit = graph.search("leaves the room", threshold=0.2).clips[0]
    assert hit.id == 1 and hit.lines[0] == "<character_0> leaves the room"
    again = import_m3_graph(source, graph, "m3video")  # re-running skips what is there
    assert again["skipped_clips"] == 2 and again["lines"] == 0
    graph.close()


def test_refuses_arbitrary_classes(tmp_path):
    class Evil:
        def __reduce__(self):
            import os

            return (os.system, ("echo pwned",))

    path = tmp_path / "evil.pkl"
    path.write_bytes(pickle.dumps(Evil()))
    with pytest.raises(UnsafePickleError, match="posix.system|os.system"):
        load_m3_pickle(path)
    junk = tmp_path / "junk.pkl"
    junk.write_bytes(b"not a pickle")
    with pytest.raises(pickle.UnpicklingError):
        load_m3_pickle(junk)
    plain = tmp_path / "plain.pkl"
    plain.write_bytes(pickle.dumps({"nodes": {}}))
    with pytest.raises(pickle.UnpicklingError, match="VideoGraph"):
        load_m3_pickle(plain)
