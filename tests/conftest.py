import os

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from m3agent.config import MemoryConfig  # noqa: E402
from m3agent.memory import MemoryGraph  # noqa: E402
from m3agent.models.embed.hashing import HashingEmbedder  # noqa: E402


@pytest.fixture
def embedder():
    return HashingEmbedder(dim=512)


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "memory.db"


def rand_vec(seed: int, dim: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture
def kitchen(db_path, embedder):
    """A hand-built 4-clip episode: Alice (face+voice) and Bob (face), names, a superseded fact."""
    graph = MemoryGraph.open(db_path, MemoryConfig(), embedder=embedder)
    video = graph.add_video("kitchen", path="kitchen.mp4", duration=120.0)
    ids = {}
    with graph.clip(video, 0, 0, 30) as b:
        ids["alice_face"] = a = b.face([rand_vec(1, 128)], crops=[(b"\xff\xd8ALICECROP", 0.9)])
        ids["alice_voice"] = av = b.voice([rand_vec(2, 256)], segments=[(3.0, 5.0, "hi I am Alice")])
        b.episodic(f"<face_{a}> opens the fridge in the kitchen")
        b.episodic(f"<voice_{av}> says hi I am Alice")
        b.semantic(f"Equivalence: <face_{a}>, <voice_{av}>")
        ids["alice_name"] = b.semantic(f"<voice_{av}>'s name is Alice")
        ids["fridge_full"] = b.semantic("The fridge is full of milk")
    with graph.clip(video, 1, 30, 60) as b:
        ids["bob_face"] = bob = b.face([rand_vec(3, 128)], crops=[(b"\xff\xd8BOBCROP", 0.8)])
        b.face([rand_vec(4, 128)], node_id=a)
        b.episodic(f"<face_{bob}> plays guitar on the sofa")
        b.episodic(f"<face_{a}> and <face_{bob}> talk about the concert")
        b.semantic(f"<face_{bob}> is a musician who plays guitar")
    with graph.clip(video, 2, 60, 90) as b:
        b.episodic(f"<face_{a}> waters the plants on the balcony")
        b.semantic(f"Equivalence: <face_{a}>, <voice_{av}>")
        ids["fridge_empty"] = b.semantic("The fridge is empty now", supersedes=[ids["fridge_full"]])
    with graph.clip(video, 3, 90, 120) as b:
        b.episodic(f"<face_{bob}> cooks pasta in the kitchen")
    graph.ids = ids
    graph.video = video
    yield graph
    graph.close()


@pytest.fixture(scope="session")
def episode_video(tmp_path_factory):
    """The fixture episode (tests/episode.py) rendered once per test session."""
    from tests.episode import build

    path = tmp_path_factory.mktemp("episode") / "episode.mp4"
    timings = build(path)
    return path, timings
