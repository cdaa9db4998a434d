"""The fixture episode: three real people (photos from shared/data/faces) with distinct espeak-ng
voices saying a known script over ~2 minutes (5 clips of 30 s), plus a scene where nobody is seen."""

from __future__ import annotations

from pathlib import Path

from m3agent.media.synth import Scene, build_episode

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
FACES = SHARED / "faces"

PEOPLE = {  # person -> (voice, name, photos)
    "david": ("en-us+m3", "David", ["obama.jpg", "obama2.jpg"]),
    "sarah": ("en+f4", "Sarah", ["train_rose_leslie_img1.jpg", "train_rose_leslie_img2.jpg"]),
    "peter": ("en-gb-x-rp+m7", "Peter", ["biden.jpg", "train_biden_biden2.jpg"]),
}

SCRIPT = [
    ("david", 0, "Hello, my name is David. I keep my bicycle in the garage."),
    ("sarah", 0, "Hi, I am Sarah. I bought a red umbrella at the market."),
    ("peter", 0, "Good morning, my name is Peter. I work as a chef in a small restaurant."),
    ("david", 1, "Yesterday I planted tomatoes in the garden behind the house."),
    (None, None, ""),
    ("sarah", 1, "My sister lives in Toronto and she plays the violin."),
    ("peter", 1, "Tonight I will cook pasta with mushrooms for everyone."),
    ("david", 0, "The car keys are in the blue bowl on the kitchen table."),
    ("sarah", 0, "I am going to the library tomorrow afternoon to return three books."),
    ("peter", 0, "My favourite football team won the match on Sunday evening."),
]

FACTS = {  # a spoken fact -> words that must appear in the line memorized for it
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


def scenes(seconds: float = 13.0) -> list[Scene]:
    out = []
    for person, photo, text in SCRIPT:
        if person is None:
            out.append(Scene(None, None, None, "", min_seconds=seconds))
            continue
        voice, _, photos = PEOPLE[person]
        out.append(Scene(person, str(FACES / photos[photo]), voice, text, min_seconds=seconds))
    return out


def build(path: Path, seconds: float = 13.0):
    return build_episode(scenes(seconds), path)
