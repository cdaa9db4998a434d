"""Entity tags in memory text: ``<face_3>``, ``<voice_12>``, ``<character_3>``.

Every rewrite goes through one anchored regex, so ``<face_1>`` can never touch ``<face_10>``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

TAG_RE = re.compile(r"<\s*(face|voice|character)_(\d+)\s*>", re.IGNORECASE)
EQUIVALENCE_RE = re.compile(r"^\s*equivalence\s*:", re.IGNORECASE)
EQUIVALENCE_WORD = "equivalence"  # every equivalence line holds it (a pre-filter for the pattern)


def tag(kind: str, number: int) -> str:
    return f"<{kind}_{number}>"


def parse_tags(text: str) -> list[tuple[str, int]]:
    """All tags in order of appearance, duplicates kept, kinds lower-cased."""
    return [(m.group(1).lower(), int(m.group(2))) for m in TAG_RE.finditer(text)]


def entity_ids(text: str) -> list[int]:
    """Distinct face/voice node ids mentioned in ``text``, in order of first appearance."""
    seen: dict[int, None] = {}
    for kind, number in parse_tags(text):
        if kind != "character":
            seen.setdefault(number, None)
    return list(seen)


def rewrite_tags(text: str, replace: Mapping[str, str] | Callable[[str, int], str | None]) -> str:
    """Rewrite whole tags. ``replace`` maps ``"face_3"`` to a replacement string (tag brackets
    included), or is a function ``(kind, number) -> str | None``; tags it does not cover are
    normalised (``< Face_3 >`` -> ``<face_3>``) and otherwise left alone."""
    if "<" not in text:  # most lines of a clip name nobody: no regex pass
        return text
    lookup = replace if callable(replace) else (lambda kind, number: replace.get(f"{kind}_{number}"))

    def sub(match: re.Match[str]) -> str:
        kind, number = match.group(1).lower(), int(match.group(2))
        new = lookup(kind, number)
        return tag(kind, number) if new is None else new

    return TAG_RE.sub(sub, text)


def is_equivalence(text: str) -> bool:
    return bool(EQUIVALENCE_RE.match(text))
