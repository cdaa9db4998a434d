import numpy as np
import pytest

from m3agent.perception.identity import IdentityBank, cluster, cosine_distance


def euclid(a, b):
    return np.linalg.norm(np.atleast_2d(a)[:, None] - np.atleast_2d(b)[None], axis=2)


def test_cluster_groups_by_average_linkage():
    rng = np.random.default_rng(0)
    a = rng.normal(0, 0.05, (5, 8)) + 1.0
    b = rng.normal(0, 0.05, (4, 8)) - 1.0
    groups = cluster(np.concatenate([a, b]), 0.5, euclid)
    assert groups == [[0, 1, 2, 3, 4], [5, 6, 7, 8]]
    assert cluster(np.zeros((0, 8)), 0.5, euclid) == []


def test_bank_matches_by_median_and_respects_taken():
    bank = IdentityBank(0.3, cosine_distance, {1: np.array([[1.0, 0.0], [0.9, 0.1]]), 2: np.array([[0.0, 1.0]])})
    assert bank.match(np.array([[1.0, 0.05]])) == 1
    assert bank.match(np.array([[0.05, 1.0]])) == 2
    assert bank.match(np.array([[1.0, 0.05]]), taken={1}) is None
    assert bank.match(np.array([[-1.0, 0.0]])) is None
    bank.keep(2, np.array([[-1.0, 0.0]]))  # the memory's snapshot policy replaced node 2's evidence
    assert bank.match(np.array([[0.05, 1.0]])) is None and bank.match(np.array([[-1.0, 0.05]])) == 2


@pytest.mark.models
def test_dlib_separates_the_shared_photos():
    from PIL import Image

    from m3agent.perception.faces.dlib import DlibFaceBackend
    from tests.data import FACES

    backend = DlibFaceBackend(upsample=1)
    photos = {"obama": ["obama.jpg", "obama2.jpg"], "biden": ["biden.jpg", "train_biden_biden2.jpg"],
              "rose": ["train_rose_leslie_img1.jpg", "train_rose_leslie_img2.jpg"]}
    embs = {}
    for person, files in photos.items():
        for f in files:
            faces = backend.detect(np.asarray(Image.open(FACES / f).convert("RGB")))
            assert len(faces) == 1 and faces[0].embedding.shape == (128,)
            embs.setdefault(person, []).append(faces[0].embedding)
    thr = backend.same_person_distance
    for person, (x, y) in embs.items():
        assert backend.distance(x, y)[0, 0] < thr
        for other, vecs in embs.items():
            if other != person:
                assert backend.distance(x, vecs[0])[0, 0] > thr
    group = backend.detect(np.asarray(Image.open(FACES / "two_people.jpg").convert("RGB")))
    assert len(group) == 2


def test_average_linkage_weighs_every_snapshot():
    # a node whose snapshots are mostly like the group but partly not: the median ignores the rest, the
    # mean (voices) does not
    x, y = [1.0, 0.0], [0.0, 1.0]
    node = {1: np.array([x, x, x, y, y])}
    assert IdentityBank(0.3, cosine_distance, node).match(np.array([x])) == 1
    assert IdentityBank(0.3, cosine_distance, node, linkage="average").match(np.array([x])) is None
    assert IdentityBank(0.5, cosine_distance, node, linkage="average").match(np.array([x])) == 1
    with pytest.raises(ValueError, match="linkage"):
        IdentityBank(0.3, cosine_distance, node, linkage="centroid")


def test_twins_fold_later_nodes_into_earlier_ones_closest_first():
    x, y = np.array([[1.0, 0.0, 0.0]]), np.array([[0.0, 1.0, 0.0]])
    near_x = np.array([[0.95, 0.05, 0.0]])
    bank = IdentityBank(0.1, cosine_distance, {3: x, 7: near_x, 9: y, 12: x + 0.01}, linkage="average")
    assert bank.twins(lambda a, b: 0.1) == [(12, 3), (7, 3)]
    # evidence moves the bar: nodes 3 and 7 seen with different faces need to be closer
    assert bank.twins(lambda a, b: 0.0 if {a, b} == {3, 7} else 0.1) == [(12, 3)]
    bank.fold(12, 3, np.concatenate([x, x + 0.01]))
    assert set(bank.snapshots) == {3, 7, 9} and len(bank.snapshots[3]) == 2


def test_a_cannot_link_keeps_two_close_rows_apart_and_their_groups_too():
    from m3agent.perception.identity import cluster

    x = np.array([[1.0, 0.0], [0.99, 0.05], [0.98, 0.1], [0.0, 1.0]])
    assert cluster(x, 0.2, cosine_distance) == [[0, 1, 2], [3]]
    cannot = np.zeros((4, 4), bool)
    cannot[0, 2] = True  # 0 and 2 are two people: 1 joins one of them, never both
    groups = cluster(x, 0.2, cosine_distance, cannot=cannot)
    assert [3] in groups and len(groups) == 3 and not any({0, 2} <= set(g) for g in groups)


def test_evidence_against_a_fold_is_a_hard_constraint_and_every_fold_says_what_it_checked():
    from m3agent.perception.identity import Evidence

    evidence = Evidence(faces={1: frozenset({10}), 2: frozenset({11}), 3: frozenset({10}), 4: frozenset()},
                        clips={1: {0, 1}, 2: {2}, 3: {3}, 4: {1}}, names={1: {"Marcus"}, 4: {"Felix"}, 3: {"marcus"}})
    assert evidence.against(1, 2) == ["linked to different faces (10 / 11)"]
    assert evidence.against(1, 4) == ["heard in the same clip (1)", "named differently (Marcus / Felix)"]
    assert evidence.against(1, 3) == []  # one face, other clips, one name in any case
    record = evidence.checked(1, 3)
    assert record["faces"] == [[10], [10]] and record["checked"] == ["different faces", "heard in one clip",
                                                                      "different names"]


def test_voice_twins_never_fold_what_memory_knows_are_two_people():
    from m3agent.config import PerceptionConfig
    from m3agent.perception.identity import Evidence
    from m3agent.perception.pipeline import Perceiver

    class Voices:
        same_speaker_cosine = 0.6

    perceiver = Perceiver.__new__(Perceiver)
    perceiver.config, perceiver.voice_threshold = PerceptionConfig(), 0.4
    same = np.array([[1.0, 0.0, 0.0]])
    bank = IdentityBank(0.4, cosine_distance, {1: same, 2: same * 1.0, 3: same + 0.001}, linkage="average")
    apart = Evidence(faces={1: frozenset({10}), 2: frozenset({11}), 3: frozenset({10})})
    folds = perceiver.voice_twins(bank, apart)
    assert [(f.gone, f.into) for f in folds] == [(3, 1)]  # identical voices 1 and 2: two faces, never one
    assert folds[0].evidence["cosine"] > 0.99 and folds[0].evidence["faces"] == [[10], [10]]


def test_two_faces_on_screen_at_once_are_two_people_however_alike():
    from m3agent.perception.faces.base import FaceDetection
    from m3agent.perception.pipeline import FaceTrack, _assign, _on_screen_together

    def det(frame, vec):
        d = FaceDetection.__new__(FaceDetection)
        d.frame_index, d.embedding = frame, np.asarray(vec, np.float32)
        return d

    twin_a = FaceTrack([det(0, [1.0, 0.0]), det(1, [1.0, 0.0])])
    twin_b = FaceTrack([det(1, [0.99, 0.01]), det(2, [0.99, 0.01])])
    later = FaceTrack([det(5, [1.0, 0.0])])
    assert _on_screen_together(twin_a, twin_b) and not _on_screen_together(twin_a, later)
    bank = IdentityBank(0.2, cosine_distance, {7: np.array([[1.0, 0.0]])})
    assigned = _assign([twin_a, twin_b], bank, apart=_on_screen_together)
    assert sorted(t.node_id is None for t in assigned) == [False, True]  # one takes node 7, the other is new
    merged = _assign([FaceTrack(list(twin_a.detections)), later], bank, apart=_on_screen_together)
    assert len(merged) == 1 and merged[0].node_id == 7  # seen at other times: one person, as before


def test_a_person_keeping_two_voices_apart_is_evidence_no_fold_overrides():
    from m3agent.perception.identity import Evidence

    kept = Evidence(apart=frozenset({frozenset((1, 2))}))
    assert kept.against(2, 1) == ["kept apart by a person"] and kept.against(1, 3) == []
