"""The fixture episode: the shipped sample episode (m3agent/samples/episode.py) built from the original photos
in tests/data/faces, so tests run on the full-size real images."""

from __future__ import annotations

from pathlib import Path

from m3agent.samples.episode import PEOPLE, SCRIPT, scenes
from m3agent.samples.synth import build_episode
from tests.data import FACES

ORIGINALS = {"david_1.jpg": "obama.jpg", "david_2.jpg": "obama2.jpg", "sarah_1.jpg": "train_rose_leslie_img1.jpg",
             "sarah_2.jpg": "train_rose_leslie_img2.jpg", "peter_1.jpg": "biden.jpg",
             "peter_2.jpg": "train_biden_biden2.jpg"}

FACTS = {  # a spoken fact -> (who says it, words that must appear in the line memorized for it)
    "bicycle": ("david", ["bicycle", "garage"]),
    "umbrella": ("sarah", ["umbrella", "market"]),
    "chef": ("peter", ["chef", "restaurant"]),
    "tomatoes": ("david", ["tomatoes", "garden"]),
    "violin": ("sarah", ["Toronto", "violin"]),
    "pasta": ("peter", ["pasta", "mushrooms"]),
    "keys": ("david", ["keys", "bowl"]),
    "library": ("sarah", ["library", "books"]),
    "football": ("peter", ["football", "Sunday"]),
}

__all__ = ["FACES", "FACTS", "PEOPLE", "SCRIPT", "build"]


def build(path: Path, seconds: float = 13.0):
    return build_episode(scenes(seconds, photo_path=lambda name: str(FACES / ORIGINALS[name])), path)
