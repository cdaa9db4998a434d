"""A person corrects who is who: merge, not-same, rename, undo; stored in the DB and kept by later clips."""

import json

import pytest

from m3agent.cli import main
from m3agent.config import MemoryConfig
from m3agent.memory import MemoryGraph
from m3agent.memory.errors import UnknownEntityError


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
