"""Characters: face and voice nodes of one person, joined through ``Equivalence:`` lines, and each speaker of a
text source (a person its records name, never joined to anyone).

Each voice keeps only the face its equivalence lines vote for most (summed edge weight; ties go to
the lower face id), then union-find over the kept equivalences gives the groups. A character is
named after its smallest member id (``<character_5>`` contains node 5), so ids stay stable when
other people are added, forgotten, or viewed as of an earlier clip.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from m3agent.memory.errors import UnknownEntityError
from m3agent.memory.model import TAG_OF_KIND, NodeKind
from m3agent.memory.store import SQLiteStore
from m3agent.memory.tags import (
    EQUIVALENCE_WORD,
    is_equivalence,
    parse_tags,
    rewrite_tags,
    rewrite_tags_many,
    tag,
)
from m3agent.memory.visibility import node_visible


@dataclass(frozen=True)
class Equivalence:
    """One equivalence line: its entity ids and the weight of its edge to each."""

    node_id: int
    entities: tuple[int, ...]
    weights: Mapping[int, float]


@dataclass
class CharacterMap:
    members: dict[int, list[int]] = field(default_factory=dict)  # character number -> node ids
    kinds: dict[int, NodeKind] = field(default_factory=dict)  # node id -> face/voice
    _of: dict[int, int] = field(default_factory=dict)  # node id -> character number
    aliases: dict[int, int] = field(default_factory=dict)  # a folded-away node id -> the node it became

    def character_of(self, node_id: int) -> int | None:
        return self._of.get(node_id)

    def member_tags(self, character: int) -> list[str]:
        """``<face_3>``, ``<voice_9>``; a speaker, who has no tag in text, is ``<speaker_7>``."""
        return [tag(TAG_OF_KIND.get(self.kinds[n], self.kinds[n].label), n) for n in self.members.get(character, [])]

    def as_tags(self) -> dict[str, list[str]]:
        """``{"character_5": ["face_5", "voice_9"], ...}`` as export shows it."""
        return {f"character_{c}": [t.strip("<>") for t in self.member_tags(c)] for c in sorted(self.members)}

    def translate(self, text: str) -> str:
        """Rewrite ``<face_N>``/``<voice_N>`` to their ``<character_k>``; unknown tags stay."""
        return rewrite_tags(text, self._character_tag)

    def translate_many(self, texts: Sequence[str]) -> list[str]:
        """:meth:`translate` of each text, in one pass (a clip's lines)."""
        return rewrite_tags_many(texts, self._character_tag)

    def _character_tag(self, kind: str, number: int) -> str | None:
        character = None if kind == "character" else self._of.get(number)
        return None if character is None else tag("character", character)

    def expand(self, text: str, limit: int = 100) -> list[str]:
        """Variants of ``text`` with each ``<character_k>`` replaced by each of its member tags."""
        variants = [text]
        for character in dict.fromkeys(n for k, n in parse_tags(text) if k == "character"):
            options = self.member_tags(character)
            if not options:
                continue
            pattern = re.compile(rf"<\s*character_{character}\s*>", re.IGNORECASE)
            variants = [pattern.sub(option, v) for v in variants for option in options][: max(1, limit)]
        return variants

    def entity_ids(self, text: str) -> list[int]:
        """Face/voice node ids a text names, directly or through ``<character_k>``."""
        out: dict[int, None] = {}
        for kind, number in parse_tags(text):
            if kind == "character":
                for member in self.members.get(number, []):
                    out.setdefault(member, None)
            elif self.aliases.get(number, number) in self.kinds:
                out.setdefault(self.aliases.get(number, number), None)
        return list(out)


def build_characters(entities: Mapping[int, NodeKind], equivalences: Iterable[Equivalence],
                     aliases: Mapping[int, int] | None = None, *, same: Iterable[tuple[int, int]] = (),
                     apart: Iterable[tuple[int, int]] = ()) -> CharacterMap:
    """Characters of ``entities``; ``aliases`` (folded-away node -> the node it became) resolve to the
    character of the node they became. A person's corrections come first: ``same`` pairs are one character,
    and no equivalence ever joins an ``apart`` pair (two people a person kept apart stay apart)."""
    aliases = aliases or {}
    parent = {n: n for n in entities}
    members = {n: {n} for n in entities}
    kept_apart: dict[int, set[int]] = {}
    for a, b in apart:
        a, b = aliases.get(a, a), aliases.get(b, b)
        kept_apart.setdefault(a, set()).add(b)
        kept_apart.setdefault(b, set()).add(a)

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        if ra == rb or (kept_apart and any(kept_apart.get(n, set()) & members[rb] for n in members[ra])):
            return
        root, other = min(ra, rb), max(ra, rb)
        parent[other] = root
        members[root] |= members.pop(other)

    for a, b in same:
        a, b = aliases.get(a, a), aliases.get(b, b)
        if a in parent and b in parent:
            union(a, b)

    votes: dict[int, dict[int, float]] = {}
    for eq in equivalences:
        ids = [e for e in eq.entities if e in entities]
        faces = [e for e in ids if entities[e] is NodeKind.FACE]
        voices = [e for e in ids if entities[e] is NodeKind.VOICE]
        for group in (faces, voices):  # same-modality equivalences join directly
            for other in group[1:]:
                union(group[0], other)
        for voice in voices:
            for face in faces:
                w = eq.weights.get(voice, 1.0)
                votes.setdefault(voice, {}).setdefault(face, 0.0)
                votes[voice][face] += w
    for voice, tally in votes.items():
        allowed = {face: w for face, w in tally.items() if face not in kept_apart.get(voice, ())}
        best = max(allowed.items(), key=lambda kv: (kv[1], -kv[0]), default=(None, 0.0))
        if best[1] > 0:
            union(voice, best[0])

    cmap = CharacterMap(kinds=dict(entities))
    for node in sorted(entities):
        root = find(node)
        cmap.members.setdefault(root, []).append(node)
        cmap._of[node] = root
    for gone, into in aliases.items():
        if into in cmap._of:
            cmap.aliases[gone] = into
            cmap._of[gone] = cmap._of[into]
    return cmap


APART = ("apart", "split")  # corrections whose two nodes are two people: a person's not-same, and a split


def apart_pairs(corrections: Iterable[Mapping]) -> list[tuple[int, int]]:
    """The node pairs ``corrections`` (as stored) keep apart: never one character, never folded."""
    return [(c["a"], c["b"]) for c in corrections if c["action"] in APART and c["b"] is not None]


_NODE_TAG = re.compile(r"\s*<?\s*(face|voice|speaker)_(\d+)\s*>?\s*", re.IGNORECASE)
_CHARACTER_ID = re.compile(r"\s*<?\s*(?:character_)?(\d+)\s*>?\s*", re.IGNORECASE)
NAME_WORDS = ("name", "called")  # every name statement holds one of these (a pre-filter for the patterns)
_NAME_PATTERNS = [
    re.compile(r"^\s*(?P<tag><[a-z]+_\d+>)\s*(?:'s|’s)\s+name\s+is\s+(?P<name>[^.,;!?<>]+)", re.IGNORECASE),
    re.compile(r"^\s*the\s+name\s+of\s+(?P<tag><[a-z]+_\d+>)\s+is\s+(?P<name>[^.,;!?<>]+)", re.IGNORECASE),
    re.compile(r"^\s*(?P<tag><[a-z]+_\d+>)\s+is\s+(?:named|called)\s+(?P<name>[^.,;!?<>]+)", re.IGNORECASE),
]


def name_statement(text: str) -> tuple[str, int, str] | None:
    """``("face", 3, "Alice")`` for a line such as ``<face_3>'s name is Alice``, else None."""
    for pattern in _NAME_PATTERNS:
        m = pattern.match(text)
        if m:
            kind, number = parse_tags(m.group("tag"))[0]
            name = m.group("name").strip().strip("\"'")
            return (kind, number, name) if name else None
    return None


def character_names(cmap: CharacterMap, statements: Iterable[tuple[str, float]]) -> dict[int, str]:
    """Most supported name per character from ``(line, weight)`` name statements in time order;
    on a tie the later statement wins."""
    tally: dict[int, dict[str, tuple[float, int]]] = {}
    for order, (text, weight) in enumerate(statements):
        parsed = name_statement(text)
        if parsed is None:
            continue
        kind, number, name = parsed
        character = number if kind == "character" else cmap.character_of(number)
        if character is None:
            continue
        total, _ = tally.setdefault(character, {}).get(name, (0.0, 0))
        tally[character][name] = (total + weight, order)
    return {c: max(names.items(), key=lambda kv: kv[1])[0] for c, names in tally.items()}



class Characters:
    """Characters and names of each video as stored (or as of a clip), computed on demand and kept
    until :meth:`clear` (the writer clears them after each commit, the facade when others wrote)."""

    def __init__(self, store: SQLiteStore):
        self.store = store
        self._maps: dict[tuple[int, int | None], CharacterMap] = {}
        self._names: dict[tuple[int, int | None], dict[int, str]] = {}
        self._video_of: dict[int, int | None] = {}
        self._speakers: dict[int, dict[int, tuple[str, int]]] = {}

    def clear(self) -> None:
        self._maps.clear()
        self._names.clear()
        self._video_of.clear()
        self._speakers.clear()

    def of(self, video_id: int, before_clip: int | None = None) -> CharacterMap:
        key = (video_id, before_clip)
        if key not in self._maps:
            entities = {
                node_id: kind
                for node_id, kind, first_clip in self.store.entity_first_clips(video_id)
                if before_clip is None or first_clip <= before_clip
            }
            entities.update((node_id, NodeKind.SPEAKER) for node_id, (_, first_clip) in self.speakers(video_id).items()
                            if before_clip is None or first_clip <= before_clip)
            eq_nodes = [
                n for n in self.store.text_nodes(video_id, kind=NodeKind.SEMANTIC, containing=EQUIVALENCE_WORD)
                if is_equivalence(n.text) and node_visible(n, before_clip)
            ]
            weights = self.store.edges_of_text([n.id for n in eq_nodes])
            equivalences = [Equivalence(n.id, tuple(n.entities), weights.get(n.id, {})) for n in eq_nodes]
            fixes = self.store.corrections(video_id)
            self._maps[key] = build_characters(
                entities, equivalences, self.store.merged_entities(video_id),
                same=[(c["a"], c["b"]) for c in fixes if c["action"] == "same"],
                apart=apart_pairs(fixes))
        return self._maps[key]

    def across_videos(self, before_clip: int | None = None) -> CharacterMap:
        """One map over every video of the DB (node ids are unique across videos), each video's part built
        when one of its nodes is first looked up (all of them take 0.7 s in a 167-video memory)."""
        return CharacterMap(*(_AcrossVideos(self, before_clip, part) for part in ("members", "kinds", "_of", "aliases")))

    def video_of(self, node_id: int) -> int | None:
        if node_id not in self._video_of:
            self._video_of[node_id] = self.store.node_video(node_id)
        return self._video_of[node_id]

    def names(self, video_id: int, before_clip: int | None = None) -> dict[int, str]:
        """Character number -> the name the memory's visible lines give it: a video's semantic name lines, and a
        text source's records that state a name the same way (``<character_2>'s name is Olga``; a text source
        stores every record as an episodic line)."""
        key = (video_id, before_clip)
        if key not in self._names:
            found = {n.id: n for word in NAME_WORDS for n in self.store.text_nodes(video_id, containing=word)}
            lines = [(n.text, n.weight) for _, n in sorted(found.items()) if node_visible(n, before_clip)]
            cmap = self.of(video_id, before_clip)
            self._names[key] = character_names(cmap, lines)
            for fix in self.store.corrections(video_id):  # a name a person gave wins over what memory heard
                character = cmap.character_of(fix["a"])
                if fix["action"] == "name" and character is not None:
                    self._names[key][character] = fix["value"]
        return dict(self._names[key])

    def speakers(self, video_id: int) -> dict[int, tuple[str, int]]:
        """Node id -> (name, first clip) of a text source's speakers (none for a video)."""
        if video_id not in self._speakers:
            nodes = self.store.speakers(video_id)
            clips = {n.id: n.clip for n in self.store.text_nodes(ids=list(nodes.values()), kind=NodeKind.SPEAKER)}
            self._speakers[video_id] = {node: (name, clips[node]) for name, node in nodes.items() if node in clips}
        return self._speakers[video_id]

    def known_names(self, video_id: int, before_clip: int | None = None) -> dict[int, str]:
        """:meth:`names` and each speaker's own name: what people are called, for a reader and for finding whom a
        user means (speakers are left out of :meth:`names`, which turns names in queries into tags that no line of
        theirs carries)."""
        cmap = self.of(video_id, before_clip)
        own = {node: name for node, (name, _) in self.speakers(video_id).items() if node in cmap.members}
        return {**own, **self.names(video_id, before_clip)}

    def names_ever(self, video_id: int, character: int) -> list[str]:
        """Every name the memory has given this character, superseded ones included, oldest first (a speaker's
        own name first)."""
        members = set(self.of(video_id).members.get(character, []))
        speakers = self.speakers(video_id)
        names: dict[str, None] = dict.fromkeys(speakers[m][0] for m in sorted(members) if m in speakers)
        for _, name in self._own_names(video_id, members):
            names.setdefault(name, None)
        return list(names)

    def _own_names(self, video_id: int, nodes: set[int]) -> Iterator[tuple[int, str]]:
        """``(node, name)`` for each line where one of ``nodes`` (or a node folded into it) gives its name."""
        aliases = self.store.merged_entities(video_id)
        for line in self.store.text_nodes(ids=self.store.texts_linked_to(nodes), kind=NodeKind.SEMANTIC):
            parsed = name_statement(line.text)
            if parsed and parsed[0] != "character" and aliases.get(parsed[1], parsed[1]) in nodes:
                yield aliases.get(parsed[1], parsed[1]), parsed[2]

    def stated_names(self, video_id: int, nodes: Sequence[int]) -> dict[int, set[str]]:
        """Node id -> the names its own lines give it (``<voice_9>'s name is Felix``), superseded ones too:
        a node that gave two names holds two people."""
        out: dict[int, set[str]] = {}
        for node, name in self._own_names(video_id, set(nodes)):
            out.setdefault(node, set()).add(name)
        return out

    def resolve_node(self, video_id: int, text: str) -> int:
        """The node a user means: ``face_3``, ``<voice_9>``, or a character (its first node: see :meth:`resolve`)."""
        cmap = self.of(video_id)
        tagged = _NODE_TAG.fullmatch(text)
        if tagged:
            node = int(tagged.group(2))
            if cmap.kinds.get(node) is None or cmap.kinds[node].label != tagged.group(1).lower():
                raise UnknownEntityError(f"no <{tagged.group(1).lower()}_{node}> in video {video_id}")
            return node
        return self.resolve(video_id, text)

    def resolve(self, video_id: int, text: str) -> int:
        """The character a user means: ``character_3``, ``<character_3>``, ``3``, or a name it is known by."""
        cmap = self.of(video_id)
        number = _CHARACTER_ID.fullmatch(text)
        if number:
            character = int(number.group(1))
            if character not in cmap.members:
                raise UnknownEntityError(f"no <character_{character}> in video {video_id}")
            return character
        wanted = text.strip().casefold()
        current = self.known_names(video_id)
        matches = sorted(c for c, name in current.items() if name.casefold() == wanted)
        if not matches:
            matches = sorted(c for c in cmap.members
                             if any(n.casefold() == wanted for n in self.names_ever(video_id, c)))
        if len(matches) > 1:
            ids = ", ".join(f"character_{c}" for c in matches)
            raise UnknownEntityError(f"several characters are called {text.strip()!r} ({ids}): give the character id")
        if not matches:
            known = ", ".join(f"{name} (character_{c})" for c, name in sorted(current.items())) or "none"
            raise UnknownEntityError(f"no character called {text.strip()!r} in video {video_id} (names known: "
                                     f"{known}); give the character id, e.g. character_3 (see `m3agent export`)")
        return matches[0]


class _AcrossVideos(Mapping):
    """One part (``members``, ``kinds``, ``_of`` or ``aliases``) of the map over all videos, all keyed by node ids (a
    character is numbered after a node): a key is looked up in the map of the video its node belongs to."""

    def __init__(self, characters: Characters, before_clip: int | None, part: str):
        self._characters, self._before_clip, self._part = characters, before_clip, part

    def _of_video(self, video_id: int) -> Mapping:
        return getattr(self._characters.of(video_id, self._before_clip), self._part)

    def __getitem__(self, node_id: int):
        video_id = self._characters.video_of(node_id)
        if video_id is None:
            raise KeyError(node_id)
        return self._of_video(video_id)[node_id]

    def __iter__(self) -> Iterator[int]:
        for video in self._characters.store.videos():
            yield from self._of_video(video.id)

    def __len__(self) -> int:
        return sum(1 for _ in self)
