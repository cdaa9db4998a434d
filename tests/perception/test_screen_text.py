"""On-screen text merged across a clip's frames, with a reader that sees what the test drew."""

import numpy as np

from m3agent.perception.screen_text import read_clip_text, text_key
from m3agent.perception.shots import frame_motion
from m3agent.perception.text.base import TextBackend, TextBox


class BoardReader(TextBackend):
    """Reads the text painted into the test's frames: each painted box is a known text."""

    name = "boards"

    def __init__(self, boards):
        self.boards, self.calls = boards, []

    def read(self, image):
        self.calls.append(image.shape[:2])
        out = []
        for text, (x0, y0, x1, y1), colour in self.boards:
            hits = np.argwhere((image == colour).all(axis=2))
            if len(hits) >= 0.5 * (x1 - x0) * (y1 - y0):
                ys, xs = hits[:, 0], hits[:, 1]
                out.append(TextBox(text, (int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1), 0.99))
        return out


SIGN = ("HALLWAY", (32, 32, 160, 96), (250, 250, 10))
CAPTION = ("Live from the harbour", (0, 192, 320, 240), (10, 250, 250))


def paint(frame, board):
    _, (x0, y0, x1, y1), colour = board
    frame[y0:y1, x0:x1] = colour
    return frame


def test_text_read_on_key_frames_and_settled_regions_merged_over_the_clip():
    blank = np.full((256, 320, 3), 60, np.uint8)
    other = np.full((256, 320, 3), 200, np.uint8)
    frames = [paint(blank.copy(), SIGN) for _ in range(3)] + [paint(paint(blank.copy(), SIGN), CAPTION)
                                                             for _ in range(3)] + [other.copy() for _ in range(2)]
    times = [10.0 + i for i in range(8)]
    reader = BoardReader([SIGN, CAPTION])
    reading = read_clip_text(frames, times, frame_motion(frames, times), reader)
    got = [(t.text, t.start, t.end) for t in reading.texts]
    assert got == [("HALLWAY", 10.0, 15.0), ("Live from the harbour", 13.0, 15.0)]
    assert reading.frames_read == 2 and reading.regions_read == 1
    assert reader.calls[-1][0] < 256  # the caption was read from its strip, not the whole frame


def test_caps_bound_the_reads_and_say_so():
    rng = np.random.default_rng(1)
    frames = [np.full((64, 64, 3), rng.integers(0, 255, 3), np.uint8) for _ in range(10)]  # ten cuts
    reader = BoardReader([])
    reading = read_clip_text(frames, [float(i) for i in range(10)], frame_motion(frames, [float(i) for i in range(10)]),
                             reader, most_frames=3, most_regions=0)
    assert len(reader.calls) == 3 and reading.frames_read == 3 and reading.unread_frames > 0


def test_text_key_folds_case_width_and_punctuation():
    assert text_key("Ｒｏｏｍ  204!") == text_key("room 204") == "room 204"
    assert text_key("会议室") == "会议室"
    assert text_key("...") == ""
