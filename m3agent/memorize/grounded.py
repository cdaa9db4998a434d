"""The grounded memorizer: memory built from perception alone, no language model.

Episodic lines say who is on screen when and who says what (with video time); semantic lines
link a voice to the face it speaks from (``Equivalence:``, voted by co-occurrence: a voice speaking
while exactly one face is visible votes for that face) and record names people give themselves.
Faces too small to identify get no tag: one line per stretch says how many were on screen (the most
on one frame), and they take no part in the vote (a crowd in the background would silence it).
What is written on screen and where the scene changes come from :mod:`m3agent.memorize.on_screen`.

A clip's episodic lines are written in the order things happen in it (at the same second: who is on screen, a
cut, text, speech), the order the training worlds write a scene in (:func:`m3agent.train.render.records`), so the
control model reads a video's memory the way it learned to. Grouped by kind instead (everyone on screen, then
every text, then all speech), the shipped model answered 37 of 101 questions about held-out world videos; in
time order, 43 (docs/RESULTS.md).
"""

from __future__ import annotations

import re
from collections import Counter

from m3agent.media.clock import clock
from m3agent.memorize.base import Memorizer, MemoryLines
from m3agent.memorize.on_screen import timed_on_screen_lines
from m3agent.perception.pipeline import ClipPerception

_NAME = r"([A-Z][a-z]+(?:\s[A-Z][a-z]+)?)"
_SELF_NAMING = [
    re.compile(rf"\b(?i:my name is|my name's) {_NAME}"),
    re.compile(r"\b(?:I am|I'm) ([A-Z][a-z]+)(?=[.,!?]| and |$)"),
    re.compile(rf"\b(?i:call me) {_NAME}"),
    re.compile(rf"\bthis is {_NAME} speaking\b", re.IGNORECASE),
]
_NOT_NAMES = {"Not", "So", "Very", "Just", "Going", "Here", "Sorry", "Fine", "Good", "Glad", "Happy", "Sure",
              "The", "A", "An", "In", "On", "At", "From", "Back", "Really", "Also", "Still", "Okay", "Ok"}


def stated_names(text: str) -> list[str]:
    names = []
    for pattern in _SELF_NAMING:
        for match in pattern.finditer(text):
            name = match.group(1).split()[0] if match.group(1).split()[0] in _NOT_NAMES else match.group(1)
            if name.split()[0] not in _NOT_NAMES:
                names.append(name)
    return list(dict.fromkeys(names))


def person_on_screen_line(who: str, start: float, end: float) -> str:
    """The line for a person seen from ``start`` to ``end`` (the training worlds write the same)."""
    return f"{who} is on screen from {clock(start)} to {clock(end)}."


def speech_line(who: str, start: float, text: str) -> str:
    """The line for what a person says at ``start`` (the training worlds write the same)."""
    return f'At {clock(start)} {who} says: "{text}"'


class GroundedMemorizer(Memorizer):
    name = "grounded"

    def __init__(self, frame_gap: float = 2.0):
        self.frame_gap = frame_gap

    def describe(self, perception: ClipPerception, face_ids: list[int], voice_ids: list[int]) -> MemoryLines:
        lines = MemoryLines()
        clip = perception.clip
        step = (clip.frame_times[1] - clip.frame_times[0]) if len(clip.frame_times) > 1 else 1.0
        timed: list[tuple[float, str]] = []  # (when, line), in the order of the kinds at the same second
        for track, node in zip(perception.faces, face_ids):
            for a, b in track.spans(gap=max(self.frame_gap, 1.5 * step)):
                if b - a < 0.5:
                    timed.append((a, f"<face_{node}> appears on screen at {clock(a)}."))
                else:
                    timed.append((a, person_on_screen_line(f"<face_{node}>", a, b)))
        for a, b, n in perception.small_face_spans(gap=max(self.frame_gap, 1.5 * step)):
            timed.append((a, small_faces_line(n, a, b, more=bool(perception.faces))))
        if not perception.faces and not perception.small_faces and clip.frames:
            timed.append((clip.start, f"Nobody is visible between {clock(clip.start)} and {clock(clip.end)}."))
        timed += timed_on_screen_lines(perception)
        votes: dict[int, Counter] = {}
        for u in perception.utterances:
            speaker = f"<voice_{voice_ids[u.voice]}>" if u.voice is not None else "Someone"
            timed.append((u.start, speech_line(speaker, u.start, u.text)))
            if u.voice is None:
                continue
            tally = votes.setdefault(voice_ids[u.voice], Counter())
            for face in _single_faces(perception, face_ids, u.start, u.end):
                tally[face] += 1
            for name in stated_names(u.text):
                lines.semantic.append(f"<voice_{voice_ids[u.voice]}>'s name is {name}")
        for voice, tally in votes.items():
            if not tally:
                continue
            face, _ = max(tally.items(), key=lambda kv: (kv[1], -kv[0]))
            lines.semantic.append(f"Equivalence: <face_{face}>, <voice_{voice}>")
        lines.episodic = [line for _, line in sorted(timed, key=lambda item: int(item[0]))]  # stable: kinds keep order
        return lines


def small_faces_line(n: int, start: float, end: float, more: bool = False) -> str:
    """E.g. "2 more faces too small to identify are on screen from 00:05 to 00:20." (``more``: besides
    the tagged faces of the clip)."""
    what = f"{n} {'more ' if more else ''}{'face' if n == 1 else 'faces'} too small to identify"
    if end - start < 0.5:
        return f"{what} {'appears' if n == 1 else 'appear'} on screen at {clock(start)}."
    return f"{what} {'is' if n == 1 else 'are'} on screen from {clock(start)} to {clock(end)}."


def _single_faces(perception: ClipPerception, face_ids: list[int], start: float, end: float) -> list[int]:
    """For each sampled frame inside [start, end] showing exactly one face, that face's node."""
    return [face_ids[track] for track in perception.single_faces(start, end)]
