"""Entity tags in memory text: ``<face_3>``, ``<voice_12>``, ``<character_3>``.

Every rewrite goes through one anchored regex, so ``<face_1>`` can never touch ``<face_10>``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

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


Replace = Mapping[str, str] | Callable[[str, int], str | None]
_SEPARATOR = "\x00"  # joins the texts rewritten in one pass: no tag can span it (it is not whitespace)


def _substitution(replace: Replace) -> Callable[[re.Match[str]], str]:
    """The function :data:`TAG_RE` substitutes with, remembering each tag's replacement (the lines rewritten
    together name the same few people again and again)."""
    lookup = replace if callable(replace) else (lambda kind, number: replace.get(f"{kind}_{number}"))
    done: dict[str, str] = {}

    def sub(match: re.Match[str]) -> str:
        found = match.group(0)
        new = done.get(found)
        if new is None:
            kind, number = match.group(1).lower(), int(match.group(2))
            new = lookup(kind, number)
            new = done[found] = tag(kind, number) if new is None else new
        return new

    return sub


def rewrite_tags(text: str, replace: Replace) -> str:
    """Rewrite whole tags. ``replace`` maps ``"face_3"`` to a replacement string (tag brackets
    included), or is a function ``(kind, number) -> str | None``; tags it does not cover are
    normalised (``< Face_3 >`` -> ``<face_3>``) and otherwise left alone."""
    if "<" not in text:  # most lines of a clip name nobody: no regex pass
        return text
    return TAG_RE.sub(_substitution(replace), text)


def rewrite_tags_many(texts: Sequence[str], replace: Replace) -> list[str]:
    """:func:`rewrite_tags` of each text, in one pass over all of them (a clip's lines, for a search)."""
    texts = list(texts)
    joined = _SEPARATOR.join(texts)
    if "<" not in joined:
        return texts
    if joined.count(_SEPARATOR) != len(texts) - 1:  # a text holding the separator itself: one by one
        return [rewrite_tags(text, replace) for text in texts]
    return TAG_RE.sub(_substitution(replace), joined).split(_SEPARATOR)


def is_equivalence(text: str) -> bool:
    return bool(EQUIVALENCE_RE.match(text))
