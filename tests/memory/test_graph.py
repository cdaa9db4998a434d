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


def test_the_graph_door_serves_what_a_policy_needs(kitchen):
    """The operations code outside the memory package uses instead of the graph's store and writer."""
    from m3agent.memory.text_sources import NotATextSourceError

    source = kitchen.claim_text_source("  notes ")
    assert kitchen.claim_text_source("notes") == source != kitchen.video  # claimed once, found after
    with pytest.raises(NotATextSourceError):
        kitchen.claim_text_source("kitchen")  # a video's name
    assert kitchen.last_clip(source) == -1 and kitchen.last_clip(kitchen.video) == 3
    assert kitchen.clip_spans(kitchen.video, [1, 9]) == {1: (30.0, 60.0)}
    kitchen.update_video_meta(source, core="Alice is a nurse.")
    assert kitchen.video_meta(source) == {"kind": "text", "core": "Alice is a nurse."}
    live = kitchen.live_lines(kitchen.video)
    assert kitchen.ids["fridge_full"] not in live and kitchen.ids["fridge_empty"] in live  # superseded: gone
    assert list(live) == sorted(live)
    assert kitchen.live_lines(kitchen.video, [kitchen.ids["fridge_full"], kitchen.ids["alice_name"]]) == {
        kitchen.ids["alice_name"]: live[kitchen.ids["alice_name"]]}
    kitchen.retire_lines([kitchen.ids["alice_name"]], 3)
    assert kitchen.ids["alice_name"] not in kitchen.live_lines(kitchen.video)
    assert kitchen.store.text_nodes(kitchen.video, ids=[kitchen.ids["alice_name"]])[0].invalidated_at == 3


def test_an_edit_lands_whole_or_not_at_all(kitchen):
    before = kitchen.store.next_node_id()
    with pytest.raises(RuntimeError), kitchen.editing():
        with kitchen.clip(kitchen.video, 3, 90.0, 120.0, append=True) as batch:
            batch.semantic("Bob likes risotto")
        raise RuntimeError("killed before the edit ends")
    assert kitchen.store.next_node_id() == before  # the clip's commit joined the edit's transaction: rolled back
    assert not any("risotto" in n.text for n in kitchen.live_lines(kitchen.video).values())


def test_a_failed_edit_leaves_no_retired_line_behind_in_the_caches(kitchen):
    fridge = kitchen.ids["fridge_empty"]
    assert any("fridge is empty" in t for c in kitchen.search("fridge empty", video=kitchen.video).clips for t in c.lines)
    with pytest.raises(RuntimeError), kitchen.editing():
        kitchen.retire_lines([fridge], 3)
        raise RuntimeError("killed before the edit ends")
    assert fridge in kitchen.live_lines(kitchen.video)
    assert any("fridge is empty" in t for c in kitchen.search("fridge empty", video=kitchen.video).clips for t in c.lines)
