"""Where a video's identities look wrong: what ``m3agent characters DB --check`` lists for a person to look at.

A character known by two names, or a voice memory has linked (``Equivalence:``) to two different faces, is
either two people in one node (the costly error) or one person split over two face nodes; either way a person
should look. Both are read from memory alone: no model loads.
"""

from __future__ import annotations

from m3agent.memory.characters import Characters
from m3agent.memory.model import NodeKind, Video
from m3agent.memory.store import SQLiteStore
from m3agent.memory.tags import EQUIVALENCE_WORD


def identity_problems(store: SQLiteStore, characters: Characters, video: Video) -> list[dict]:
    """``{"character", "problem", ...}`` per suspicious character of ``video``, most serious first."""
    cmap = characters.of(video.id)
    problems = []
    for number in sorted(cmap.members):
        names = characters.names_ever(video.id, number)
        distinct = {n.casefold(): n for n in names}
        if len(distinct) > 1:
            problems.append({"character": f"character_{number}", "problem": "known by two names",
                             "names": sorted(distinct.values())})
    faces_of: dict[int, set[int]] = {}
    for line in store.text_nodes(video.id, kind=NodeKind.SEMANTIC, containing=EQUIVALENCE_WORD):
        kinds = store.node_kinds(line.entities)
        faces = {e for e in line.entities if kinds.get(e) is NodeKind.FACE}
        for voice in (e for e in line.entities if kinds.get(e) is NodeKind.VOICE):
            faces_of.setdefault(voice, set()).update(faces)
    for voice, faces in sorted(faces_of.items()):
        if len(faces) > 1:
            problems.append({"character": f"character_{cmap.character_of(voice)}",
                             "problem": "one voice seen speaking as two faces", "voice": f"voice_{voice}",
                             "faces": [f"face_{f}" for f in sorted(faces)]})
    return problems
