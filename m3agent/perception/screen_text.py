"""What a clip shows in writing: on-screen text read on key frames and on regions that changed and settled,
merged across the clip's frames into one entry per text and stretch of time.

The reader looks at each shot's first frame whole, and inside a shot only at regions that changed and then
held still (:meth:`FrameMotion.settled_regions`): a caption appearing under a speaker is read from its strip
of the frame, a talking face is not read at all. A text read once stays on screen until a block under it
changes or its shot ends. Reads per clip are capped (``most_frames`` key frames, ``most_regions`` regions): a
slide deck or a scrolled document costs a bounded time, and the report says when the cap left something unread.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

import numpy as np

from m3agent.perception.shots import FrameMotion, key_frames
from m3agent.perception.text.base import TextBackend

Box = tuple[int, int, int, int]


@dataclass
class ScreenText:
    text: str
    start: float  # video time of the first and last frames it is on
    end: float
    box: Box  # where it was read first (pixels of the frame)
    score: float
    since: float | None = None  # set when it was already on screen at the end of the clip before (then: from when)
    replaces: int | None = None  # the memory line of the clip before that it continues


@dataclass
class TextReading:
    """A clip's on-screen text, and what reading it cost."""

    texts: list[ScreenText] = field(default_factory=list)
    frames_read: int = 0
    regions_read: int = 0
    unread_frames: int = 0  # key frames and settled regions left unread by the caps
    unread_regions: int = 0


def _unchanged(seen: np.ndarray, later: np.ndarray, box: Box, tolerance: float = 12.0) -> bool:
    """Whether the pixels under ``box`` are still what they were when the text was read: a block beside it may
    have changed, or the encoder's noise crossed a block's threshold, and the text is still there."""
    x0, y0, x1, y1 = box
    a, b = seen[y0:y1:2, x0:x1:2], later[y0:y1:2, x0:x1:2]
    return a.size > 0 and a.shape == b.shape and float(np.abs(a.astype(np.int16) - b).mean()) < tolerance


def text_key(text: str) -> str:
    """What two readings of one text share: case, width, spacing and punctuation aside."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(re.sub(r"[^\w]+", " ", folded).split())


def read_clip_text(frames, times: list[float], motion: FrameMotion, reader: TextBackend, most_frames: int = 4,
                   most_regions: int = 3, keys: list[int] | None = None) -> TextReading:
    """The texts on ``frames`` (one clip's, at ``times``): key frames read whole (``keys``, else the first
    ``most_frames`` shots' :func:`~m3agent.perception.shots.key_frames`), then the largest settled regions, each
    sighting kept on screen while its pixels stay, sightings of one text a frame apart merged."""
    reading = TextReading()
    keys = key_frames(motion.shots, most_frames) if keys is None else keys
    reading.unread_frames = len(motion.shots) - len(keys)
    regions = [r for r in motion.settled_regions() if r.frame not in keys]
    reading.unread_regions = max(0, len(regions) - most_regions)
    sightings: list[tuple[int, Box, str, float]] = []  # frame, box in the frame, text, score
    for i in keys:
        sightings += [(i, found.box, found.text, found.score) for found in reader.read(frames[i])]
        reading.frames_read += 1
    h, w = frames[0].shape[:2] if frames else (0, 0)
    for region in regions[:most_regions]:
        x0, y0, x1, y1 = region.box[0], region.box[1], min(w, region.box[2]), min(h, region.box[3])
        for found in reader.read(frames[region.frame][y0:y1, x0:x1]):
            bx0, by0, bx1, by1 = found.box
            sightings.append((region.frame, (bx0 + x0, by0 + y0, bx1 + x0, by1 + y0), found.text, found.score))
        reading.regions_read += 1
    step = (times[1] - times[0]) if len(times) > 1 else 1.0
    merged: dict[str, list[ScreenText]] = {}
    for i, box, text, score in sorted(sightings, key=lambda s: s[0]):
        last = i
        shot = motion.shot_of(i)
        while last < shot.last and (not motion.touched(last + 1, box) or _unchanged(frames[i], frames[last + 1], box)):
            last += 1
        runs = merged.setdefault(text_key(text), [])
        if runs and times[i] - runs[-1].end <= 1.5 * step:
            run = runs[-1]
            run.end = max(run.end, times[last])
            if score > run.score:
                run.text, run.score = text, score
        else:
            runs.append(ScreenText(text, times[i], times[last], box, score))
    reading.texts = sorted((run for runs in merged.values() for run in runs if text_key(run.text)),
                           key=lambda t: (t.start, t.box[1], t.box[0]))
    return reading
