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

#: a few conversation turns in the text-record format (``m3agent remember``), two sessions, two speakers
CHAT = [
    {"id": "D1:1", "text": "I went to the LGBTQ support group yesterday", "time": "8 May 2023", "speaker": "Caroline",
     "session": "1"},
    {"id": "D1:2", "text": "That is great, I painted a sunrise", "time": "8 May 2023", "speaker": "Melanie",
     "session": "1"},
    {"id": "D2:1", "text": "We went camping with the kids", "time": "25 May 2023", "speaker": "Melanie", "session": "2"},
    {"id": "D2:2", "text": "I am starting a counselling course in June", "time": "25 May 2023",
     "speaker": "Caroline", "session": "2"},
]

__all__ = ["CHAT", "DATA", "FACES", "FACES_MORE", "M3BENCH", "SPEECH", "VIDEO_CLIP"]
