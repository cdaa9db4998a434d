"""characters --check: where identities look wrong, read from memory alone."""

import json

import numpy as np

from m3agent.cli import main
from m3agent.config import MemoryConfig
from m3agent.memory import MemoryGraph
from m3agent.memory.model import NodeKind
from m3agent.perception.identity import Evidence
from tests.conftest import rand_vec


def test_a_clean_memory_has_no_problem_and_a_collapsed_voice_is_listed(kitchen, db_path, capsys):
    assert kitchen.identity_problems() == []
    voice, bob = kitchen.ids["alice_voice"], kitchen.ids["bob_face"]
    with kitchen.clip(kitchen.video, 3, 90, 120, append=True) as b:  # Alice's voice node now speaks as Bob too
        b.semantic(f"Equivalence: <face_{bob}>, <voice_{voice}>")
        b.semantic(f"<voice_{voice}>'s name is Robert")
    problems = kitchen.identity_problems()
    assert {p["problem"] for p in problems} == {"known by two names", "one voice seen speaking as two faces"}
    two_faces = next(p for p in problems if p["problem"].startswith("one voice"))
    assert two_faces["voice"] == f"voice_{voice}" and f"face_{bob}" in two_faces["faces"]
    assert next(p for p in problems if p["problem"] == "known by two names")["names"] == ["Alice", "Robert"]
    kitchen.close()
    assert main(["characters", str(db_path), "--check"]) == 1  # scripts gate on it
    assert len(json.loads(capsys.readouterr().out)) == 2


def _two_speakers_folded(graph):
    """Marcus speaks under his face in clip 0; an unmarked voice in clip 1 is folded into his voice node."""
    video = graph.add_video("talk", path="talk.mp4", duration=120.0)
    with graph.clip(video, 0, 0, 30) as b:
        marcus_face = b.face([rand_vec(1, 128)])
        marcus = b.voice([rand_vec(2, 256)], segments=[(1.0, 4.0, "my name is Marcus")])
        b.semantic(f"Equivalence: <face_{marcus_face}>, <voice_{marcus}>")
        b.semantic(f"<voice_{marcus}>'s name is Marcus")
    with graph.clip(video, 1, 30, 60) as b:
        stranger = b.voice([rand_vec(3, 256)], segments=[(31.0, 35.0, "I mend sails")])
        line = b.episodic(f"<voice_{stranger}> says I mend sails")
    record = Evidence(clips={marcus: {0}, stranger: {1}}).checked(stranger, marcus)
    graph.fold_entities([(stranger, marcus)], 1, evidence={stranger: record})
    return video, marcus_face, marcus, stranger, line


def test_a_fold_later_evidence_contradicts_is_undone_and_the_clips_go_back(db_path, embedder):
    graph = MemoryGraph.open(db_path, MemoryConfig(), embedder=embedder)
    video, marcus_face, marcus, stranger, line = _two_speakers_folded(graph)
    assert graph.undo_contradicted_folds(video) == []  # nothing says the fold was wrong yet
    with graph.clip(video, 2, 60, 90) as b:  # the folded node now speaks alone under another face, as Felix
        felix_face = b.face([rand_vec(4, 128)])
        b.voice([rand_vec(5, 256)], node_id=marcus, segments=[(61.0, 64.0, "I am Felix")])
        later = b.episodic(f"<voice_{marcus}> says I am Felix")
        b.semantic(f"Equivalence: <face_{felix_face}>, <voice_{marcus}>")
        b.semantic(f"<voice_{marcus}>'s name is Felix")
    assert {p["problem"] for p in graph.identity_problems(video)} == {"known by two names",
                                                                       "one voice seen speaking as two faces"}
    (undone,) = graph.undo_contradicted_folds(video)
    new = undone["node"]
    assert undone["gone"] == stranger and undone["clips"] == [1, 2] and "named differently" in undone["reason"]
    assert graph.sightings(video)[marcus] == [0] and graph.sightings(video)[new] == [1, 2]
    segments = graph.store.voice_segments(video)
    assert [s.text for s in segments[new]] == ["I mend sails", "I am Felix"]
    assert graph.store.text_nodes(ids=[later], kinds=[NodeKind.EPISODIC])[0].text == f"<voice_{new}> says I am Felix"
    cmap = graph.characters(video)
    assert cmap.character_of(stranger) == cmap.character_of(new) == cmap.character_of(felix_face)  # old tags follow
    assert cmap.character_of(marcus) == cmap.character_of(marcus_face) != cmap.character_of(new)
    assert graph.identity_problems(video) == []
    assert sorted(graph.names(video).values()) == ["Felix", "Marcus"]
    fold = next(f for f in graph.folds(video) if f["gone"] == stranger)
    assert fold["into"] == new and fold["evidence"]["undone"]["node"] == new
    (fix,) = graph.corrections(video)
    assert fix["action"] == "split" and fix["by"] == "memory" and fix["fold of"] == stranger
    assert frozenset((marcus, new)) in graph.kept_apart(video)  # never folded again
    assert graph.undo_contradicted_folds(video) == []
    graph.close()


def test_a_fold_that_later_evidence_agrees_with_stays(db_path, embedder):
    graph = MemoryGraph.open(db_path, MemoryConfig(), embedder=embedder)
    video, marcus_face, marcus, _, _ = _two_speakers_folded(graph)
    with graph.clip(video, 2, 60, 90) as b:
        b.voice([rand_vec(5, 256)], node_id=marcus, segments=[(61.0, 64.0, "Marcus again")])
        b.semantic(f"Equivalence: <face_{marcus_face}>, <voice_{marcus}>")
        b.semantic(f"<voice_{marcus}>'s name is Marcus")
    assert graph.undo_contradicted_folds(video) == []
    assert graph.sightings(video)[marcus] == [0, 1, 2]
    graph.close()


def _near(seed: int, around: np.ndarray, scale: float = 0.02) -> np.ndarray:
    return around + scale * np.random.default_rng(seed).standard_normal(around.shape).astype(np.float32)


def test_a_face_node_holding_two_groups_of_faces_is_listed(db_path, embedder):
    graph = MemoryGraph.open(db_path, MemoryConfig(), embedder=embedder)
    video = graph.add_video("faces", path="faces.mp4", duration=60.0,
                            meta={"face_identity": {"metric": "euclidean", "threshold": 0.55}})
    one, other = rand_vec(1, 128), rand_vec(2, 128)
    with graph.clip(video, 0, 0, 30) as b:
        steady = b.face([_near(i, one) for i in range(4)])
        mixed = b.face([_near(10, one), _near(11, one)])
    with graph.clip(video, 1, 30, 60) as b:
        b.face([_near(12, other), _near(13, other)], node_id=mixed)
    (problem,) = graph.identity_problems(video)
    assert problem["face"] == f"face_{mixed}" and problem["clips"] == [[0], [1]]
    assert f"face_{steady}" not in str(graph.identity_problems(video))
    graph.close()


def test_the_face_check_needs_the_memorizer_s_threshold(kitchen):
    assert kitchen.identity_problems() == []  # kitchen's video kept no face_identity: nothing to judge by
