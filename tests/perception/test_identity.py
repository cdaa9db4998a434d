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
