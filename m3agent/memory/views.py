"""What people browse in a memory: one card per character, and the clips in order with their lines.

The app's characters and timeline views and ``m3agent characters`` / ``m3agent timeline`` read these,
so both show the same thing. Lines are shown with names (``Alice (character_3)``) instead of node tags;
a superseded fact stays in the timeline, marked with the clip and line that replaced it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from m3agent.memory.characters import CharacterMap, Characters
from m3agent.memory.model import DECLARATIVE_KINDS, NodeKind, Video, VoiceSegment
from m3agent.memory.store import SQLiteStore
from m3agent.memory.tags import is_equivalence, rewrite_tags


@dataclass
class CharacterCard:
    number: int  # <character_N>
    name: str | None
    members: list[str]  # "face_3", "voice_9"
    clips: list[int]  # clips where any member is seen or heard
    faces: list[bytes] = field(default_factory=list, repr=False)  # best JPEG crops first
    voice: VoiceSegment | None = None  # the longest thing it said: a sample of its voice
    lines: int = 0  # declarative lines about it

    @property
    def label(self) -> str:
        return f"{self.name} (character_{self.number})" if self.name else f"character_{self.number}"

    def to_dict(self) -> dict:
        data = asdict(self)
        data.pop("faces")
        data["face_crops"] = len(self.faces)
        data["label"] = self.label
        return data


@dataclass
class TimelineLine:
    id: int
    kind: str  # "episodic" | "semantic"
    text: str  # names filled in
    superseded_by: int | None = None
    superseded_at: int | None = None  # the clip from which a newer line replaced it


@dataclass
class TimelineClip:
    clip: int
    start: float
    end: float
    lines: list[TimelineLine]
    characters: list[int]  # seen, heard or named in this clip

    def to_dict(self) -> dict:
        return asdict(self)


def labeller(cmap: CharacterMap, names: dict[int, str]):
    """A function that turns ``<face_3>`` / ``<character_3>`` in a text into ``Alice (character_3)``."""

    def sub(kind: str, number: int) -> str | None:
        if kind not in ("face", "voice", "character"):
            return None
        character = number if kind == "character" else cmap.character_of(number)
        if character is None:
            return None
        name = names.get(character)
        return f"{name} (character_{character})" if name else f"character_{character}"

    return lambda text: rewrite_tags(text, sub)


def _shown(text: str, label) -> str:
    """An equivalence line names the nodes it joins (``face_0, voice_3``); every other line names people."""
    return text.replace("<", "").replace(">", "") if is_equivalence(text) else label(text)


def character_cards(store: SQLiteStore, characters: Characters, video: Video, *, crops: int = 3) -> list[CharacterCard]:
    """Every character of ``video``, most seen first, each with up to ``crops`` face crops."""
    cmap = characters.of(video.id)
    names = characters.known_names(video.id)
    sightings = store.sightings(video.id)
    segments = store.voice_segments(video.id)
    about: dict[int, int] = {}
    for node in store.text_nodes(video.id, kinds=DECLARATIVE_KINDS):
        for character in {cmap.character_of(e) for e in node.entities} - {None}:
            about[character] = about.get(character, 0) + 1
    cards = []
    for number, members in cmap.members.items():
        clips = sorted({clip for m in members for clip in sightings.get(m, [])})
        faces: list[tuple[float, bytes]] = []
        voice: VoiceSegment | None = None
        for member in members:
            if cmap.kinds[member] is NodeKind.FACE:
                faces.extend((quality or 0.0, jpeg) for _, quality, jpeg in store.crops(member))
            for segment in segments.get(member, []):
                if voice is None or segment.end - segment.start > voice.end - voice.start:
                    voice = segment
        faces.sort(key=lambda qj: -qj[0])
        cards.append(CharacterCard(number, names.get(number), [t.strip("<>") for t in cmap.member_tags(number)],
                                   clips, [jpeg for _, jpeg in faces[:crops]], voice, about.get(number, 0)))
    cards.sort(key=lambda c: (-len(c.clips), c.number))
    return cards


def timeline(store: SQLiteStore, characters: Characters, video: Video, *, character: int | None = None) -> list[TimelineClip]:
    """The clips of ``video`` in order with their episodic and semantic lines; with ``character``, only
    the clips it is seen or heard in and the lines about it."""
    cmap = characters.of(video.id)
    label = labeller(cmap, characters.names(video.id))
    by_clip: dict[int, list] = {}
    for node in store.text_nodes(video.id, kinds=DECLARATIVE_KINDS):
        by_clip.setdefault(node.clip, []).append(node)
    seen: dict[int, set[int]] = {}
    for node_id, clips in store.sightings(video.id).items():
        owner = cmap.character_of(node_id)
        for clip in clips:
            if owner is not None:
                seen.setdefault(clip, set()).add(owner)
    out = []
    for clip in store.clips(video.id):
        nodes = by_clip.get(clip.id, [])
        present = set(seen.get(clip.id, set()))
        for node in nodes:
            present |= {cmap.character_of(e) for e in node.entities} - {None}
        if character is not None:
            if character not in present:
                continue
            nodes = [n for n in nodes if character in {cmap.character_of(e) for e in n.entities}]
        lines = [TimelineLine(n.id, n.kind.label, _shown(n.text, label), n.invalidated_by, n.invalidated_at)
                 for n in nodes]
        out.append(TimelineClip(clip.id, clip.start, clip.end, lines, sorted(present)))
    return out
