"""Paths of the test data that ships with the repository (``tests/data``; sources and licenses in
``tests/data/README.md``)."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
FACES = DATA / "faces"  # photos of real people, several per person
FACES_MORE = DATA / "faces_more"  # more photos, group photos, astronaut.png, t1.jpg
VIDEO_CLIP = DATA / "video" / "short_hamilton_clip.mp4"  # a real 10 s clip with faces and audio
M3BENCH = DATA / "m3bench"  # M3-Bench annotations: robot.json, web.json
MEMORYBENCH = DATA / "memorybench"  # a MemoryBench fixture of our own: records.jsonl, corpus/
SPEECH = DATA / "speech"  # LibriSpeech test-other (speaker id = folder) and a three-speaker interview

__all__ = ["DATA", "FACES", "FACES_MORE", "M3BENCH", "SPEECH", "VIDEO_CLIP"]
