"""A person corrects who is who: merge, not-same, rename, undo; stored in the DB and kept by later clips."""

import json

import numpy as np
import pytest

from m3agent.cli import main
from m3agent.config import MemoryConfig
from m3agent.memory import MemoryGraph
from m3agent.memory.errors import UnknownEntityError
from tests.conftest import rand_vec


def _characters(graph):
    cmap = graph.characters(graph.video)
    return sorted(sorted(members) for members in cmap.members.values())


def test_not_same_splits_and_a_later_clip_never_joins_them_again_until_undone(kitchen, db_path, embedder):
    face, voice = kitchen.ids["alice_face"], kitchen.ids["alice_voice"]
    assert [face, voice] in _characters(kitchen)
    fix = kitchen.correct(None, "not-same", f"face_{face}", f"<voice_{voice}>")
    assert [face] in _characters(kitchen) and [voice] in _characters(kitchen)
    with kitchen.clip(kitchen.video, 4, 120, 150) as b:  # memorization goes on and votes for them again
        b.semantic(f"Equivalence: <face_{face}>, <voice_{voice}>")
    assert [face] in _characters(kitchen) and [voice] in _characters(kitchen)
    kitchen.close()
    reopened = MemoryGraph.open(db_path, MemoryConfig(), embedder=embedder)  # survives a resume
    reopened.video = kitchen.video
    assert [face] in _characters(reopened)
    reopened.undo_correction(None, fix["id"])
    assert [face, voice] in _characters(reopened)
    with pytest.raises(UnknownEntityError, match="no correction"):
        reopened.undo_correction(None, fix["id"])
    reopened.close()


def test_merge_and_rename(kitchen):
    alice, bob = kitchen.ids["alice_face"], kitchen.ids["bob_face"]
    kitchen.correct(None, "rename", "Alice", "Alicia Keys")
    assert "Alicia Keys" in kitchen.names(kitchen.video).values()
    assert kitchen.resolve_character(None, "alicia keys") == kitchen.characters(kitchen.video).character_of(alice)
    kitchen.correct(None, "merge", "Alicia Keys", f"face_{bob}")
    assert any({alice, bob} <= set(m) for m in _characters(kitchen))
    with pytest.raises(UnknownEntityError, match="no <face_999>"):
        kitchen.correct(None, "merge", "face_999", f"face_{bob}")
    with pytest.raises(UnknownEntityError, match="one node"):
        kitchen.correct(None, "not-same", f"face_{bob}", f"face_{bob}")


def test_corrections_from_the_cli(kitchen, db_path, capsys):
    face, voice = kitchen.ids["alice_face"], kitchen.ids["alice_voice"]
    kitchen.close()
    assert main(["characters", str(db_path), "not-same", f"face_{face}", f"voice_{voice}"]) == 0
    out = capsys.readouterr()
    assert "correction 1 stored" in out.err
    assert not any({f"face_{face}", f"voice_{voice}"} <= set(c["members"]) for c in json.loads(out.out))
    assert main(["characters", str(db_path), "corrections"]) == 0
    assert [c["action"] for c in json.loads(capsys.readouterr().out)] == ["apart"]
    assert main(["characters", str(db_path), "undo", "1"]) == 0
    assert any({f"face_{face}", f"voice_{voice}"} <= set(c["members"]) for c in json.loads(capsys.readouterr().out))
    assert main(["characters", str(db_path), "merge", "face_1"]) == 2
    assert "merge needs two arguments" in capsys.readouterr().err


def _text_of(graph, line_id):
    return graph.store.text_nodes(ids=[line_id], kinds=list(graph.store.node_kinds([line_id]).values()))[0].text


def test_split_gives_a_node_s_clips_their_own_node_kept_apart_across_resume_and_undone(kitchen, db_path, embedder):
    face = kitchen.ids["alice_face"]
    with kitchen.clip(kitchen.video, 4, 120, 150) as b:  # Alice's face node is seen in clips 0, 1 and 4
        b.face([rand_vec(9, 128)], node_id=face, crops=[(b"\xff\xd8OTHERCROP", 0.7)])
        line = b.episodic(f"<face_{face}> paints the fence")
    fix = kitchen.correct(None, "split", f"face_{face}", "4")
    new = fix["b"]
    assert fix["clips"] == [4] and fix["by"] == "person" and new > face
    assert kitchen.sightings(kitchen.video)[new] == [4] and kitchen.sightings(kitchen.video)[face] == [0, 1]
    assert _text_of(kitchen, line) == f"<face_{new}> paints the fence"  # the clip's tags name the new node
    assert [c for _, c, _, _ in kitchen.store.entity_embeddings(new)] == [4]
    assert [c for c, _, _ in kitchen.store.crops(new)] == [4]
    assert kitchen.search("paints the fence", video=kitchen.video).clips[0].id == 4
    stored = np.frombuffer(kitchen.store.text_vector_blobs([line])[0], np.float32)
    assert np.allclose(stored, embedder.embed([f"<face_{new}> paints the fence"])[0], atol=1e-6)  # re-embedded
    cards = {tuple(c.members): c for c in kitchen.character_cards()}
    assert (f"face_{new}",) in cards and 4 not in cards[next(m for m in cards if f"face_{face}" in m)].clips
    with kitchen.clip(kitchen.video, 5, 150, 180) as b:  # a later vote never joins what a person split
        b.semantic(f"Equivalence: <face_{face}>, <face_{new}>")
    assert [new] in _characters(kitchen)
    kitchen.close()
    reopened = MemoryGraph.open(db_path, MemoryConfig(), embedder=embedder)
    assert [c["action"] for c in reopened.corrections(None)] == ["split"]
    assert [new] in _characters_of(reopened)
    reopened.undo_correction(None, fix["id"])  # one node again; the new node's tags resolve to it
    assert reopened.sightings(reopened.resolve_video(None).id)[face] == [0, 1, 4]
    cmap = reopened.characters(reopened.resolve_video(None).id)
    assert cmap.character_of(new) == cmap.character_of(face)
    assert reopened.corrections(None) == []
    reopened.close()


def _characters_of(graph):
    cmap = graph.characters(graph.resolve_video(None).id)
    return sorted(sorted(members) for members in cmap.members.values())


def test_split_refuses_clips_the_node_is_not_in_all_of_its_clips_and_bad_specs(kitchen):
    face, voice = kitchen.ids["alice_face"], kitchen.ids["alice_voice"]
    with pytest.raises(UnknownEntityError, match="is not in clip 3"):
        kitchen.correct(None, "split", f"face_{face}", "1,3")
    with pytest.raises(UnknownEntityError, match="must leave"):
        kitchen.correct(None, "split", f"face_{face}", "0-1")
    with pytest.raises(UnknownEntityError, match="not a clip"):
        kitchen.correct(None, "split", f"face_{face}", "1;DROP TABLE nodes")
    with pytest.raises(UnknownEntityError, match="say which one"):
        kitchen.correct(None, "split", "Alice", "1")  # Alice is a face and a voice node
    with pytest.raises(UnknownEntityError, match="needs the clips"):
        kitchen.correct(None, "split", f"voice_{voice}", "")
    assert kitchen.corrections(None) == []


def test_split_from_the_cli(kitchen, db_path, capsys):
    face = kitchen.ids["alice_face"]
    kitchen.close()
    assert main(["characters", str(db_path), "split", f"face_{face}", "--clips", "1"]) == 0
    out = capsys.readouterr()
    assert "are node" in out.err
    assert main(["characters", str(db_path), "corrections"]) == 0
    (fix,) = json.loads(capsys.readouterr().out)
    assert fix["action"] == "split" and fix["clips"] == [1] and fix["a"] == face
    cards = {tuple(c["members"]): c for c in json.loads(out.out)}
    assert cards[(f"face_{fix['b']}",)]["clips"] == [1]  # the split-off node is a character of its own
    assert main(["characters", str(db_path), "split", f"face_{face}"]) == 2
    assert "--clips" in capsys.readouterr().err
