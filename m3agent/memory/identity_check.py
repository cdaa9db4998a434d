"""Where a video's identities look wrong, read from memory alone (no model loads).

* what ``m3agent characters DB --check`` lists for a person to look at: a character known by two names, a voice
  memory has linked (``Equivalence:``) to two different faces (two people in one node, the costly error, or one
  person split over two face nodes), a face node whose snapshots fall into two groups of faces farther apart than
  the memorizer's own threshold;
* which earlier fold later evidence contradicts (:func:`contradicted_fold`): the memorizer undoes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from m3agent.memory.characters import Characters, name_statement
from m3agent.memory.model import NodeKind, Video
from m3agent.memory.store import SQLiteStore
from m3agent.memory.tags import EQUIVALENCE_WORD, is_equivalence

Mark = tuple[str, object]  # ("name", "felix") or ("face", 12): what a line says of who a node is


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
    for face, groups in two_faced_nodes(store, video):
        problems.append({"character": f"character_{cmap.character_of(face)}",
                         "problem": "one face node holds two groups of faces", "face": f"face_{face}",
                         "clips": groups})
    return problems


def two_faced_nodes(store: SQLiteStore, video: Video) -> list[tuple[int, list[list[int]]]]:
    """Face nodes whose kept snapshots form two or more groups (each of two snapshots or more) that the
    memorizer's own threshold keeps apart, with the clips each group was seen in. A video memorized before
    memory kept that threshold (video meta ``face_identity``) is not checked: another backend's scale would
    mislead."""
    from m3agent.perception.identity import cluster, cosine_distance, euclidean_distance

    identity = store.video_meta(video.id).get("face_identity") or {}
    if identity.get("metric") not in ("euclidean", "cosine") or not identity.get("threshold"):
        return []
    distance = cosine_distance if identity["metric"] == "cosine" else euclidean_distance
    found = []
    for node, _, kind, _ in store.entity_rows(video.id):
        if kind is not NodeKind.FACE:
            continue
        rows = store.entity_embeddings(node)
        if len(rows) < 4:
            continue
        groups = [g for g in cluster(np.stack([r[3] for r in rows]), float(identity["threshold"]), distance)
                  if len(g) >= 2]
        if len(groups) > 1:
            found.append((node, [sorted({rows[i][1] for i in g if rows[i][1] is not None}) for g in groups]))
    return found


# ---------------------------------------------------------------------- folds later evidence contradicts
def clip_marks(store: SQLiteStore, node: int, aliases: Mapping[int, int]) -> dict[int, set[Mark]]:
    """Clip -> what the node's own lines in that clip say of who it is: the names it gives itself and the faces
    an ``Equivalence:`` line links it to (tags of nodes folded into it count as its own)."""
    out: dict[int, set[Mark]] = {}
    for line in store.text_nodes(ids=store.texts_linked_to([node]), kind=NodeKind.SEMANTIC):
        parsed = name_statement(line.text)
        if parsed and parsed[0] != "character" and aliases.get(parsed[1], parsed[1]) == node:
            out.setdefault(line.clip, set()).add(("name", parsed[2].casefold()))
        elif is_equivalence(line.text) and node in line.entities:
            kinds = store.node_kinds(line.entities)
            out.setdefault(line.clip, set()).update(("face", e) for e in line.entities
                                                    if kinds.get(e) is NodeKind.FACE)
    return out


def conflict(a: Iterable[Mark], b: Iterable[Mark]) -> str | None:
    """Why marks ``a`` and ``b`` cannot be one person (None: nothing says so): both give names and none in
    common, or both are linked to faces and none in common."""
    a, b = set(a), set(b)
    for kind, what in (("name", "named differently"), ("face", "seen speaking as different faces")):
        left, right = {v for k, v in a if k == kind}, {v for k, v in b if k == kind}
        if left and right and not left & right:
            return f"{what} ({', '.join(map(str, sorted(left)))} / {', '.join(map(str, sorted(right)))})"
    return None


def contradicted_fold(store: SQLiteStore, video_id: int) -> dict | None:
    """The latest fold of the video that evidence written after it contradicts, as ``{"gone", "into", "clips",
    "reason"}``: ``clips`` are the node's clips that go back to a node of their own (the folded-away node's clips,
    and later ones that fit them and not the rest). A fold made before folds kept their evidence is never undone
    (nobody knows which clips were whose)."""
    aliases = store.merged_entities(video_id)
    sightings = store.sightings(video_id)
    for fold in reversed(store.folds(video_id)):
        evidence, into = fold["evidence"] or {}, fold["into"]
        if "clips" not in evidence or evidence.get("undone") or into not in sightings:
            continue
        held = set(sightings[into])
        own_before = set(evidence["clips"][1])
        gone_side = set(evidence["clips"][0]) & held
        marks = clip_marks(store, into, aliases)
        gone_marks = set().union(*(marks.get(c, set()) for c in gone_side))
        into_marks = set().union(*(marks.get(c, set()) for c in held & own_before))
        for clip in sorted(held - gone_side - own_before):  # heard after the fold: with the side it fits
            seen = marks.get(clip, set())
            if seen and conflict(seen, into_marks) and not conflict(seen, gone_marks):
                gone_side.add(clip)
                gone_marks |= seen
            else:
                into_marks |= seen
        reason = conflict(gone_marks, into_marks)
        if reason and gone_side and held - gone_side:
            return {"gone": fold["gone"], "into": into, "clips": sorted(gone_side), "reason": reason}
    return None
