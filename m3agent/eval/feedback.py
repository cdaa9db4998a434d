"""What a memory keeps from a user's feedback: one procedural line per reaction worth learning from.

Shared by the MemoryBench harness and feedback on video memory. A liked or satisfying answer says what
worked; a disliked or unsatisfying one says what not to repeat, with the user's words; a correction
carries the right answer. A neutral reaction teaches nothing and is not stored.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

LIKED_FROM = 8.0  # satisfaction at or above this counts as "this worked"
DISLIKED_BELOW = 5.0  # and below this as "this did not"


def _clip(text: str, limit: int = 240) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_CORRECTION = re.compile(r'^Asked "(?P<request>.*)", the answer "(?P<answer>.*)" was wrong; '
                         r'the user corrected it: "(?P<correction>.*)"\.$', re.DOTALL)


def correction_of(lesson: str) -> tuple[str, str, str] | None:
    """``(request, rejected answer, correction)`` of a line :func:`lesson_text` wrote from a correction, else None."""
    match = _CORRECTION.match(lesson)
    return (match["request"], match["answer"], match["correction"]) if match else None


def lesson_text(request: str, answer: str, *, satisfaction: float | None = None, actions: Sequence[str] = (),
                reply: str | None = None, correction: str | None = None) -> str | None:
    """The procedural line learned from one reaction, or None when there is nothing to learn."""
    request, answer = _clip(request), _clip(answer)
    if correction:
        return (f"Asked \"{request}\", the answer \"{answer}\" was wrong; the user corrected it: "
                f"\"{_clip(correction)}\".")
    good = "like" in actions or "copy" in actions or (satisfaction is not None and satisfaction >= LIKED_FROM)
    bad = "dislike" in actions or (satisfaction is not None and satisfaction < DISLIKED_BELOW)
    if bad and not good:
        said = f" The user said: \"{_clip(reply)}\"" if reply else ""
        return f"Asked \"{request}\", the answer \"{answer}\" did not satisfy the user; do not repeat it.{said}"
    if good and not bad:
        return f"Asked \"{request}\", the answer \"{answer}\" satisfied the user; answer alike."
    return None
