"""Graph semantics: reinforcement, contradiction, characters, names, forgetting."""

import pytest

from m3agent.memory import MemoryGraph, UnknownEntityError
from tests.conftest import rand_vec


def test_repeated_fact_reinforces_and_contradiction_weakens_then_supersedes(db_path, embedder):
    graph = MemoryGraph.open(db_path, embedder=embedder)
    v = graph.add_video("names")
    with graph.clip(v, 0, 0, 30) as b:
        f = b.face([rand_vec(1, 128)])
        first = b.semantic(f"<face_{f}>'s name is Carol")
    with graph.clip(v, 1, 30, 60) as b:
        b.semantic(f"<face_{f}>'s name is Carol")
    assert b.report.reinforced and b.report.inserted == []
    assert graph.store.weight(first) == 2.0
    with graph.clip(v, 2, 60, 90) as b:
        b.semantic(f"<face_{f}>'s name is Dana")  # contradicts: weakens Carol (2 -> 1)
    assert first in b.report.weakened and first not in b.report.superseded
    assert graph.store.weight(first) == 1.0
    with graph.clip(v, 3, 90, 120) as b:
        b.semantic(f"<face_{f}>'s name is Dana")  # reinforces Dana and weakens Carol again (1 -> 0)
    assert first in b.report.superseded and graph.store.weight(first) == 0.0
    assert graph.names(v)[f] == "Dana"
    assert graph.names(v, before_clip=2)[f] == "Dana"  # equal support at clip 2: the later statement
    assert graph.names(v, before_clip=1)[f] == "Carol"  # as of clip 1 the old name still holds
    graph.close()


def test_voice_takes_the_face_most_votes_point_to(db_path, embedder):
    graph = MemoryGraph.open(db_path, embedder=embedder)
    v = graph.add_video("votes")
    with graph.clip(v, 0, 0, 30) as b:
        f1, f2 = b.face([rand_vec(1, 128)]), b.face([rand_vec(2, 128)])
        voice = b.voice([rand_vec(3, 256)])
        b.semantic(f"Equivalence: <face_{f1}>, <voice_{voice}>")
    for clip in (1, 2):
        with graph.clip(v, clip, clip * 30, clip * 30 + 30) as b:
            b.semantic(f"Equivalence: <face_{f2}>, <voice_{voice}>")
    chars = graph.characters(v)
    assert chars.character_of(voice) == chars.character_of(f2) != chars.character_of(f1)
    # as of clip 0 only the first vote existed
    early = graph.characters(v, before_clip=0)
    assert early.character_of(voice) == early.character_of(f1)
    graph.close()


def test_tags_rewritten_anchored(db_path, embedder):
    graph = MemoryGraph.open(db_path, embedder=embedder)
    v = graph.add_video("anchored")
    with graph.clip(v, 0, 0, 30) as b:
        faces = [b.face([rand_vec(i, 128)]) for i in range(12)]
        assert faces[1] == 1 and faces[10] == 10
        b.episodic("<face_1> hands a cup to <face_10>")
        b.semantic("Equivalence: <face_1>, <face_11>")
    lines = graph.search("hands a cup", threshold=0.1).clips[0].lines
    assert lines == ["<character_1> hands a cup to <character_10>"]
    graph.close()


def test_forget_removes_every_trace_from_the_file(kitchen, db_path):
    a = kitchen.ids["alice_face"]
    report = kitchen.forget(kitchen.video, f"<character_{a}>")
    assert set(report["removed_entities"]) == {a, kitchen.ids["alice_voice"]}
    assert kitchen.ids["alice_name"] in report["removed_lines"]
    assert len(report["rewritten_lines"]) == 1  # "<face_a> and <face_bob> talk about the concert"
    data = kitchen.export()
    assert f"character_{a}" not in data["characters"]
    texts = [n["text"] for n in data["nodes"] if n["text"]]
    assert any(t.startswith("someone and <face_") for t in texts)
    assert not any(f"<face_{a}>" in t for t in texts)
    assert kitchen.search("What is the character id of Alice").clips == [] or all(
        "Alice" not in line for c in kitchen.search("What is the character id of Alice").clips for line in c.lines
    )
    kitchen.close()
    blob = b"".join(p.read_bytes() for p in db_path.parent.iterdir() if p.name.startswith(db_path.name))
    for secret in (b"ALICECROP", b"opens the fridge", b"name is Alice", b"hi I am Alice", b"waters the plants"):
        assert secret not in blob, secret
    assert b"BOBCROP" in blob and b"plays guitar" in blob  # others are untouched
    with pytest.raises(UnknownEntityError):
        MemoryGraph.open(db_path).forget(1, f"character_{a}")
