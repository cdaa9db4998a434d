"""Shots, key frames and settled regions from a clip's frames."""

import numpy as np

from m3agent.perception.shots import frame_motion, key_frames


def room(colour, size=(256, 320)):
    frame = np.zeros((*size, 3), np.uint8)
    frame[:] = colour
    frame[40:120, 40:200] = (240, 240, 240)  # a bright board on the wall
    return frame


def test_a_cut_starts_a_shot_and_a_still_frame_does_not():
    red, blue = room((160, 30, 30)), room((30, 40, 170))
    frames = [red, red.copy(), blue, blue.copy(), blue.copy()]
    motion = frame_motion(frames, [0.0, 1.0, 2.0, 3.0, 4.0])
    assert [(s.first, s.last, s.start, s.end) for s in motion.shots] == [(0, 1, 0.0, 1.0), (2, 4, 2.0, 4.0)]
    assert key_frames(motion.shots, 4) == [0, 2]
    assert key_frames(motion.shots, 1) == [2]  # the longer shot's first frame
    assert not motion.touched(1, (40, 40, 200, 120)) and motion.touched(2, (40, 40, 200, 120))


def test_a_camera_moving_in_one_room_is_one_shot():
    rng = np.random.default_rng(0)
    wide = rng.integers(0, 255, (256, 1400, 3), np.uint8)  # one textured room, panned across 40 px a second
    frames = [np.ascontiguousarray(wide[:, 40 * i : 40 * i + 320]) for i in range(8)]
    motion = frame_motion(frames, [float(i) for i in range(8)])
    assert all(mask is None or mask.mean() > 0.5 for mask in motion.changed)  # every block changes ...
    assert len(motion.shots) == 1  # ... but the colours stay: no cut


def test_a_caption_that_appears_and_stays_is_a_settled_region():
    base = room((60, 90, 60))
    captioned = base.copy()
    captioned[200:240, 20:300] = (200, 20, 20)
    talking = [base.copy() for _ in range(6)]
    for i, frame in enumerate(talking):  # a patch flickering every frame: never settles
        frame[130:170, 250:290] = (i * 40) % 255
    frames = talking[:3] + [np.where(captioned != base, captioned, f) for f in talking[3:]]
    motion = frame_motion(frames, [float(i) for i in range(6)])
    assert len(motion.shots) == 1
    regions = motion.settled_regions()
    caption = [r for r in regions if r.box[1] <= 200 and r.box[3] >= 240 and r.box[2] - r.box[0] >= 280]
    assert [r.frame for r in caption] == [3]
    assert not [r for r in regions if r.frame < 5 and r.box[0] >= 200 and r.box[3] <= 200]  # the flicker


def test_frames_of_another_size_start_a_shot():
    frames = [room((10, 10, 10)), room((10, 10, 10), size=(128, 160))]
    assert len(frame_motion(frames, [0.0, 1.0]).shots) == 2
    assert frame_motion([], []).shots == []
