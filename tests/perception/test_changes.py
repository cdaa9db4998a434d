"""Detection only where a frame changed (``ChangedRegionLocator``): with a stand-in detector that finds
painted squares, so every crop it is asked about can be checked; and with RetinaFace on real photos,
where the result must be what a search of the whole frame gives."""

import numpy as np
import pytest

from m3agent.perception.faces.base import FaceBackend, iou
from m3agent.perception.faces.changes import BLOCK, ChangedRegionLocator


class Squares(FaceBackend):
    """Finds every 40x40 white square wholly inside what it is shown; remembers each crop's size."""

    name, dim, same_person_distance, local = "squares", 2, 0.5, True

    def __init__(self):
        self.shown = []

    def locate(self, frame, scale=None):
        self.shown.append(frame.shape[:2])
        white = frame[:, :, 0] == 255
        found = []
        ys, xs = np.nonzero(white[:-39, :-39] & white[39:, 39:] & white[:-39, 39:] & white[39:, :-39])
        for y, x in zip(ys, xs):
            if (y == 0 or not white[y - 1, x]) and (x == 0 or not white[y, x - 1]):
                found.append(((int(x), int(y), int(x) + 40, int(y) + 40), 0.99))
        return found

    def embed(self, frame, box):
        return np.zeros(2, np.float32)


def frame_with(*corners, noise=0, seed=0):
    frame = np.full((720, 1280, 3), 60, np.uint8)
    if noise:
        frame = (frame + np.random.default_rng(seed).integers(0, noise + 1, frame.shape)).astype(np.uint8)
    for x, y in corners:
        frame[y:y + 40, x:x + 40] = 255
    return frame


def test_a_still_frame_is_not_searched_again_and_keeps_its_faces():
    backend = Squares()
    locate = ChangedRegionLocator(backend)
    first = locate.locate(frame_with((100, 100), (900, 500)))
    assert len(first) == 2 and backend.shown == [(720, 1280)]  # the clip's first frame: searched whole
    again = locate.locate(frame_with((100, 100), (900, 500), noise=1, seed=1))  # re-encoding noise only
    assert again == first and len(backend.shown) == 1


def test_only_the_changed_part_is_searched_and_faces_elsewhere_are_kept():
    backend = Squares()
    locate = ChangedRegionLocator(backend)
    locate.locate(frame_with((100, 100), (900, 500)))
    moved = locate.locate(frame_with((100, 100), (960, 520)))  # one face moved
    h, w = backend.shown[-1]
    assert h * w < 0.1 * 720 * 1280 and h % BLOCK == 0 and w % BLOCK == 0  # a small aligned crop
    assert sorted(b for b, _ in moved) == [(100, 100, 140, 140), (960, 520, 1000, 560)]
    gone = locate.locate(frame_with((960, 520)))  # the other face left
    assert [b for b, _ in gone] == [(960, 520, 1000, 560)]
    arrived = locate.locate(frame_with((960, 520), (300, 600)))
    assert sorted(b for b, _ in arrived) == [(300, 600, 340, 640), (960, 520, 1000, 560)]
    assert locate.pixels_searched < 0.5 * locate.pixels_seen


def test_a_change_inside_a_face_searches_the_whole_face():
    """A mouth moving changes a few blocks of a big face: the crop must hold all of it to find it."""
    backend = Squares()
    locate = ChangedRegionLocator(backend)
    frame = frame_with((600, 300))
    locate.locate(frame)
    talking = frame.copy()
    talking[330:338, 610:630, 1:] = 100  # a change inside the face (the square stays: red is 255)
    found = locate.locate(talking)
    assert len(backend.shown) == 2 and [b for b, _ in found] == [(600, 300, 640, 340)]


def test_a_cut_or_a_moving_camera_searches_the_whole_frame():
    backend = Squares()
    locate = ChangedRegionLocator(backend)
    locate.locate(frame_with((100, 100)))
    cut = np.full((720, 1280, 3), 140, np.uint8)
    cut[200:240, 200:240] = 255
    assert [b for b, _ in locate.locate(cut)] == [(200, 200, 240, 240)]
    assert backend.shown[-1] == (720, 1280)


@pytest.fixture(scope="module")
def retina():
    from m3agent.config import load_config
    from m3agent.factory import build_face

    config = load_config(overrides=["memorize.perception.face_backend=retinaface"])
    return build_face(config.memorize.perception)


@pytest.mark.models
def test_retinaface_on_changed_parts_finds_what_the_whole_frame_shows(retina):
    from bench import perf_faces as pf
    from tests.perception.test_retinaface import place

    frames, frame = [], None
    # people arrive one by one at several sizes, one moves, one leaves: each frame differs in part only
    for photo, width, at in [("obama.jpg", 110, (100, 100)), ("biden.jpg", 60, (700, 400)),
                             ("alex-lacamoire.png", 40, (1000, 150))]:
        frame, _ = place(pf, photo, width, at=at, frame=frame)
        frames.append(frame.copy())
    moved, _ = place(pf, "biden.jpg", 60, at=(760, 420), frame=frames[0].copy())
    moved, _ = place(pf, "alex-lacamoire.png", 40, at=(1000, 150), frame=moved)
    frames += [moved, frames[0].copy()]
    locate = ChangedRegionLocator(retina)
    for frame in frames:
        whole = retina.locate(frame)
        part = locate.locate(frame)
        assert len(part) == len(whole) and all(max(iou(a, b) for b, _ in whole) > 0.9 for a, _ in part)
    assert [len(retina.locate(f)) for f in frames] == [1, 2, 3, 3, 1]
    assert locate.pixels_searched < 0.7 * locate.pixels_seen
