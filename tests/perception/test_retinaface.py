"""The default face backend: RetinaFace finds small faces in 720p frames, dlib's descriptor names them.

The frames are built from the repository's photos as ``bench/perf_faces.py`` builds them: each face cut out
with some surroundings, scaled to a face width, placed over a collage of the photos' face-free parts."""

import numpy as np
import pytest

from m3agent.config import PerceptionConfig, load_config
from m3agent.media.clips import MediaClip
from m3agent.perception.faces.retinaface import _priors, dlib_square, nms


def test_default_backend_is_retinaface_and_dlib_stays_selectable():
    pc = load_config().memorize.perception
    assert pc.face_backend == "retinaface" and pc.face_min_embed_size == 30 and pc.max_side == 1280
    assert load_config(overrides=["memorize.perception.face_backend=dlib"]).memorize.perception.face_backend == "dlib"


def test_nms_priors_and_the_dlib_square():
    boxes = np.array([[0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30]], np.float32)
    assert nms(boxes, np.array([0.8, 0.9, 0.7]), 0.4) == [1, 2]
    priors = _priors(720, 1280)
    assert len(priors) == 2 * (90 * 160 + 45 * 80 + 23 * 40)  # the network's 37,840 outputs at 1280x720
    assert priors[0].tolist() == [4.0, 4.0, 16.0] and priors[1].tolist() == [4.0, 4.0, 32.0]
    left, top, right, bottom = dlib_square((100, 100, 170, 200), 1280, 720)
    assert abs((right - left) - (bottom - top)) <= 1 and top > 100  # square, brows to chin
    assert dlib_square((0, 0, 40, 50), 30, 30)[2:] == (30, 30)  # clipped to the frame


@pytest.fixture(scope="module")
def retina():
    from m3agent.factory import build_face

    config = load_config(overrides=["memorize.perception.face_backend=retinaface"])
    return build_face(config.memorize.perception)


@pytest.fixture(scope="module")
def pasted():
    from bench import perf_faces

    return perf_faces


def place(pf, photo: str, width: int, at=(600, 300), frame=None, index: int = 0):
    """``photo``'s face number ``index`` at ``width`` px on a face-free 1280x720 frame; (frame, face box)."""
    face = [f for f in pf.reference_faces() if f.photo == photo][index]
    frame = pf.background(7).copy() if frame is None else frame
    patch, box = pf._cutout(pf._photo(photo), face, pf._face_boxes(photo), width)
    frame[at[1]:at[1] + patch.shape[0], at[0]:at[0] + patch.shape[1]] = patch
    return frame, (box[0] + at[0], box[1] + at[1], box[2] + at[0], box[3] + at[1])


@pytest.mark.models
def test_the_group_photo_six_of_six(retina):
    from PIL import Image

    from tests.data import FACES_MORE

    photo = np.asarray(Image.open(FACES_MORE / "t1.jpg").convert("RGB"))
    assert len(retina.locate(photo)) == 6
    # and shrunk to a quarter on a 720p frame: faces 23-29 px wide
    small = Image.fromarray(photo).resize((320, 222), Image.LANCZOS)
    frame = np.full((720, 1280, 3), 90, np.uint8)
    frame[200:422, 400:720] = np.asarray(small)
    found = retina.locate(frame)
    assert len(found) == 6 and max(b[2] - b[0] for b, _ in found) < 30


@pytest.mark.models
def test_recall_at_40_px_and_up_and_no_false_hit(retina, pasted):
    faces = pasted.reference_faces()
    assert len(faces) >= 20
    sets = {width: pasted.pasted_frames(faces, width) for width in (40, 60, 110)}
    face_free = [pasted.background(10_000 + k) for k in range(2)] + [np.full((720, 1280, 3), 64, np.uint8)]
    result = pasted.measure(retina, faces, sets, face_free, embed=False)
    for width, row in result["per_size"].items():
        assert row["found"] >= 0.95 * row["faces"], (width, row)
    assert result["false_hits"] == 0
    assert all(retina.locate(frame) == [] for frame in face_free)


def perceiver(retina):
    from m3agent.perception.pipeline import Perceiver

    return Perceiver(retina, None, None, PerceptionConfig())


def clip_of(frames, index=0):
    return MediaClip(index, 30.0 * index, 30.0 * index + len(frames), frames,
                     [30.0 * index + k for k in range(len(frames))])


@pytest.mark.models
def test_a_face_below_the_embed_size_is_seen_not_identified(retina, pasted):
    from m3agent.memorize.grounded import GroundedMemorizer

    frame, box = place(pasted, "alex-lacamoire.png", 22)
    (found, _), = retina.locate(frame)
    assert pasted.is_hit(found, box) and found[2] - found[0] < 30  # detected, below the embed size
    p = perceiver(retina)
    out = p.perceive(clip_of([frame, frame]), p.face_bank({}), p.voice_bank({}))
    assert out.faces == [] and len(out.small_faces) == 2 and out.small_face_count == 1
    assert all(d.embedding.size == 0 for d in out.small_faces)
    lines = GroundedMemorizer().describe(out, [], [])
    assert lines.episodic == ["1 face too small to identify is on screen from 00:00 to 00:01."]


@pytest.mark.models
def test_one_person_across_sizes_and_photos_is_one_face_node(retina, pasted):
    p = perceiver(retina)
    bank = p.face_bank({})
    big = [place(pasted, "obama.jpg", 110)[0]] * 3
    first = p.perceive(clip_of(big), bank, p.voice_bank({}))
    assert len(first.faces) == 1 and first.faces[0].node_id is None
    bank.keep(1, first.faces[0].embeddings)  # the memory made it face node 1
    frames = []
    for k, (photo, width) in enumerate([("obama.jpg", 40), ("obama2.jpg", 40), ("obama1.jpg", 60),
                                        ("obama3.jpg", 45), ("obama.jpg", 60), ("obama2.jpg", 110)]):
        frame, _ = place(pasted, photo, width, at=(100 + 180 * k, 100 + 60 * k))
        frames.append(place(pasted, "biden.jpg", 40, at=(900, 500), frame=frame)[0])  # someone else beside
    second = p.perceive(clip_of(frames, index=1), bank, p.voice_bank({}))
    nodes = [track.node_id for track in second.faces]
    assert sorted(nodes, key=str) == [1, None], nodes  # every Obama matches node 1; Biden is new
    obama = next(t for t in second.faces if t.node_id == 1)
    assert len(obama.detections) == 6
