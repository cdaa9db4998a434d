"""Memory lines for what a clip shows in writing and where its scene changes, written once per text.

A text still on screen from the clip before (a channel logo, a watermark, a sign in a long shot) is not
written again: its line from the clip before is replaced by one with the whole span, so today's memory holds
one line per text and stretch, and an as-of reader before this clip still sees the shorter one. A text whose
words are being said at the time (burned-in subtitles, a slide read aloud) is left to the speech line.
"""

from __future__ import annotations

import re

from m3agent.media.clock import clock
from m3agent.perception.pipeline import ClipPerception
from m3agent.perception.screen_text import ScreenText, text_key

_LINE = re.compile(r'^The text "(?P<text>.*)" (?:is on screen from (?P<a>[\d:]+) to (?P<b>[\d:]+)'
                   r'|appears on screen at (?P<at>[\d:]+))\.$')
SUBTITLE_WORDS = 3  # a text this long or longer whose words are mostly being said is a subtitle
SUBTITLE_SHARE = 0.6


def screen_text_line(text: str, start: float, end: float) -> str:
    """E.g. ``The text "HALLWAY" is on screen from 00:01 to 00:29.``"""
    text = text.replace('"', "'")
    if end - start < 0.5:
        return f'The text "{text}" appears on screen at {clock(start)}.'
    return f'The text "{text}" is on screen from {clock(start)} to {clock(end)}.'


def scene_change_line(at: float) -> str:
    return f"The scene changes at {clock(at)}."


def _seconds(stamp: str) -> float:
    parts = [int(p) for p in stamp.split(":")]
    return float(sum(p * 60 ** k for k, p in enumerate(reversed(parts))))


def parse_screen_text_line(line: str) -> tuple[str, float, float] | None:
    """``(text, first second, last second)`` of a line :func:`screen_text_line` wrote, else None."""
    match = _LINE.match(line)
    if match is None:
        return None
    if match["at"]:
        return match["text"], _seconds(match["at"]), _seconds(match["at"])
    return match["text"], _seconds(match["a"]), _seconds(match["b"])


def said_aloud(text: ScreenText, perception: ClipPerception, slack: float = 3.0) -> bool:
    """Whether most words of a text of several words are spoken while it is on screen."""
    words = text_key(text.text).split()
    if len(words) < SUBTITLE_WORDS:
        return False
    spoken = {w for u in perception.utterances if u.start <= text.end + slack and u.end >= text.start - slack
              for w in text_key(u.text).split()}
    return sum(w in spoken for w in words) >= SUBTITLE_SHARE * len(words)


def continue_texts(perception: ClipPerception, before: list[tuple[int, str]], before_end: float) -> None:
    """Mark each text on screen at this clip's start that a line of the clip before (``(id, text)`` pairs; it
    ended at ``before_end``) shows until its end: ``since`` and ``replaces`` say which line it continues."""
    clip = perception.clip
    step = (clip.frame_times[1] - clip.frame_times[0]) if len(clip.frame_times) > 1 else 1.0
    open_lines = {}
    for node_id, line in before:
        parsed = parse_screen_text_line(line)
        if parsed is not None and parsed[2] >= int(before_end - 1.5 * step):
            open_lines[text_key(parsed[0])] = (node_id, parsed[1])
    for text in perception.texts:
        found = open_lines.get(text_key(text.text))
        if found is not None and text.start <= clip.start + 1.5 * step:
            text.replaces, text.since = found[0], found[1]


def timed_on_screen_lines(perception: ClipPerception) -> list[tuple[float, str]]:
    """``(when, line)``: scene changes inside the clip, then the texts on screen that are not being said."""
    lines = [(shot.start, scene_change_line(shot.start)) for shot in perception.shots if shot.first > 0]
    return lines + [(t.start, screen_text_line(t.text, t.since if t.since is not None else t.start, t.end))
                    for t in perception.texts if not said_aloud(t, perception)]


def on_screen_lines(perception: ClipPerception) -> list[str]:
    """Scene changes inside the clip, and the texts on screen that are not being said."""
    return [line for _, line in timed_on_screen_lines(perception)]
