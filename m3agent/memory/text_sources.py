"""Text memories on the video core: a conversation or a document stored like a video.

A text source is a video row whose clips are sessions: the records of one session (or, without
sessions, each record) form one clip, so search, as-of queries (``before_clip``) and the control
process work unchanged. A record becomes one line, ``[time] speaker: text``, with its id, time,
speaker and session kept in the line's metadata; a speaker is an entity node its lines link to.
Records are stored once per id: giving the same file again adds nothing. Procedural records (what
worked, what a user corrected) are lines of their own kind, searched only when asked for.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from m3agent.errors import M3AgentError
from m3agent.files.jsonl import LineError, file_lines, loads, too_long
from m3agent.memory.model import NodeKind
from m3agent.memory.store import SQLiteStore
from m3agent.memory.writer import MemoryWriter

#: the most records one transaction of ``remember`` writes: progress is kept (and shown) batch by batch
COMMIT_RECORDS = 256
#: the most characters one record's text may have: a record is a turn or a passage; a longer document is
#: split into records (a line that long embeds as its first few hundred words anyway)
MAX_RECORD_TEXT = 100_000
#: the longest line of a records file: a record of the longest text, its fields and JSON escapes
MAX_RECORD_LINE = 8 * MAX_RECORD_TEXT


class RecordError(M3AgentError, ValueError):
    """A records file that cannot be read at all."""


@dataclass(frozen=True)
class TextRecord:
    id: str
    text: str
    time: str | None = None
    speaker: str | None = None
    session: str | None = None

    def line(self) -> str:
        """The stored line: the time first (it helps lexical search find "when" questions' answers),
        then who spoke."""
        head = f"[{self.time}] " if self.time else ""
        who = f"{self.speaker}: " if self.speaker else ""
        return head + who + self.text

    def meta(self) -> dict:
        out = {"record": self.id}
        out.update({k: v for k, v in (("time", self.time), ("speaker", self.speaker), ("session", self.session)) if v})
        return out


def parse_record(value: object) -> TextRecord:
    """One record ``{"id", "text", "time"?, "speaker"?, "session"?}``; ValueError says what is wrong."""
    if not isinstance(value, dict):
        raise ValueError(f"a record is a JSON object, not {type(value).__name__}")
    rid = value.get("id")
    if isinstance(rid, bool) or not isinstance(rid, str | int) or str(rid).strip() == "":
        raise ValueError("the record has no usable \"id\" (a string or a whole number)")
    if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in str(rid)):
        raise ValueError("the record's \"id\" holds a control character")
    if len(str(rid)) > 200:
        raise ValueError(f"the record's \"id\" has {len(str(rid))} characters; at most 200")
    text = value.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"record {rid!r} has no \"text\"")
    if len(text) > MAX_RECORD_TEXT:
        raise ValueError(f"record {rid!r} has {len(text):,} characters of text, at most {MAX_RECORD_TEXT:,}: "
                         "split it into several records")
    optional = {}
    for key in ("time", "speaker", "session"):
        item = value.get(key)
        if item is None or item == "":
            continue
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise ValueError(f"record {rid!r}: {key!r} must be text or a number")
        if len(str(item)) > 1000:
            raise ValueError(f"record {rid!r}: {key!r} has {len(str(item)):,} characters, at most 1,000")
        optional[key] = " ".join(str(item).split())
    return TextRecord(str(rid).strip(), " ".join(text.split()), **optional)


def read_records(path: str | os.PathLike[str]) -> tuple[list[TextRecord], list[tuple[int, str]]]:
    """Records of a JSON-lines file (read by :mod:`m3agent.files.jsonl`: UTF-8 or UTF-16 with a BOM, lines of at most
    :data:`MAX_RECORD_LINE` characters, text only), and ``(line number, reason)`` of each line that is not one
    (they are skipped: one bad line loses nothing else)."""
    if not os.path.exists(path):
        raise RecordError(f"records file not found: {path}")
    records, problems = [], []
    for number, text in file_lines(path, error=RecordError, unreadable="cannot read records file {source}: {reason}",
                                   max_line=MAX_RECORD_LINE):
        try:
            if text is None:
                raise ValueError(too_long(MAX_RECORD_LINE))
            records.append(parse_record(loads(text)))
        except LineError as exc:
            problems.append((number, f"not JSON ({exc.msg})"))
        except ValueError as exc:
            problems.append((number, str(exc)))
    return records, problems


class NotATextSourceError(RecordError):
    """Records were given for a name that belongs to a video."""


def text_source(store: SQLiteStore, writer: MemoryWriter, source: str) -> int:
    """The id of text source ``source``, created if new; a video's name is refused (its clips are time)."""
    source = " ".join(str(source).split())
    if not source:
        raise RecordError("a text source needs a name")
    existing = next((v for v in store.videos() if v.name == source), None)
    if existing is None:
        return writer.add_video(source, None, None, 1.0, {"kind": "text"})
    if store.video_meta(existing.id).get("kind") != "text":
        raise NotATextSourceError(f"{store.path}: {source!r} is a video, not a text source; "
                                  "give the records another --source")
    return existing.id


def remember_lesson(writer: MemoryWriter, embed: Callable[[Sequence[str]], np.ndarray], video_id: int, clip: int,
                    text: str, meta: dict | None = None) -> int:
    """One procedural line on any video or source, learned at ``clip`` (as-of searches before it do not
    see it): feedback on an answer, a correction. Returns its node id."""
    if not writer.has_clip(video_id, clip):
        raise ValueError(f"video {video_id} has no clip {clip} to attach a lesson to")
    with writer.clip(video_id, clip, *clip_span(writer.store, video_id, clip), append=True) as batch:
        node = batch.procedural(text, vector=embed([text])[0], meta=meta)
    return node


def clip_span(store: SQLiteStore, video_id: int, clip: int) -> tuple[float, float]:
    """Where clip ``clip`` of a video or text source lies, by the source's own clip length (a text source made
    by :func:`text_source` counts its sessions in 1-s clips; one created with the clips of a video keeps those)."""
    seconds = store.resolve_video(video_id).clip_seconds
    return clip * seconds, (clip + 1) * seconds


@dataclass
class RememberReport:
    source: str
    added: int = 0
    already: int = 0  # records whose id was stored before with the same text (or repeated in the input)
    changed: list[str] = field(default_factory=list)  # ids stored before with other text: the stored one is kept
    forgotten: int = 0  # records whose id was forgotten (m3agent forget): not stored again
    clips: list[int] = field(default_factory=list)

    def to_dict(self) -> dict:
        out = {"source": self.source, "added": self.added, "already_stored": self.already, "clips": len(self.clips)}
        if self.changed:
            out["changed"] = len(self.changed)
        if self.forgotten:
            out["forgotten"] = self.forgotten
        return out


def remember_records(store: SQLiteStore, writer: MemoryWriter, embed: Callable[[Sequence[str]], np.ndarray],
                     source: str, records: Iterable[TextRecord], *, kind: NodeKind = NodeKind.EPISODIC,
                     progress: Callable[[int], None] | None = None) -> RememberReport:
    """Store records as lines of ``source`` (created if new), committed in transactions of at most
    :data:`COMMIT_RECORDS` records, so an interrupted run keeps what it wrote and resumes by being run again.

    A record id already stored (among the source's records of this kind: procedural lessons and episodic
    records are two namespaces) is not stored again; if its text differs, the report lists it in ``changed``
    (the stored line stays: a memory line is not rewritten behind the lines that cite it)."""
    if kind not in (NodeKind.EPISODIC, NodeKind.PROCEDURAL):
        raise ValueError(f"records are stored as episodic or procedural lines, not {kind.label}")
    video_id = text_source(store, writer, source)
    report = RememberReport(source)
    records = list(records)
    stored = store.record_nodes(video_id, [r.id for r in records], procedural=kind is NodeKind.PROCEDURAL)
    stored_lines = {n.id: n.text for n in store.text_nodes(video_id, ids=list(stored.values()), kind=kind)}
    given: dict[str, str] = {}
    fresh: list[TextRecord] = []
    for record in records:
        earlier = stored_lines.get(stored[record.id]) if record.id in stored else given.get(record.id)
        if record.id in stored or record.id in given:
            if earlier is not None and earlier != record.line():
                report.changed.append(record.id)
            else:
                report.already += 1
            continue
        given[record.id] = record.line()
        fresh.append(record)
    pieces = [(clip, stored_clip or start > 0, recs[start : start + COMMIT_RECORDS])
              for clip, stored_clip, recs in _clip_groups(store, video_id, fresh)
              for start in range(0, len(recs), COMMIT_RECORDS)]
    speakers = store.speakers(video_id)
    window: list[tuple[int, bool, list[TextRecord]]] = []
    for index, piece in enumerate(pieces):  # embed up to COMMIT_RECORDS lines at once, commit piece by piece
        window.append(piece)
        following = pieces[index + 1][2] if index + 1 < len(pieces) else None
        if following is not None and sum(len(p[2]) for p in window) + len(following) <= COMMIT_RECORDS:
            continue
        vectors = iter(embed([r.line() for _, _, recs in window for r in recs]))
        for clip, append, recs in window:
            speakers.update(_write_piece(writer, video_id, clip, append, recs, vectors, kind, speakers))
            report.added += len(recs)
            if clip not in report.clips:
                report.clips.append(clip)
            if progress is not None:
                progress(len(recs))
        window = []
    return report


def _clip_groups(store: SQLiteStore, video_id: int, records: list[TextRecord]) -> list[tuple[int, bool, list]]:
    """``(clip, clip already stored, records)``: a session's records share a clip (an earlier run's, if it stored
    that session), a record without a session is a clip of its own."""
    next_clip = store.last_clip(video_id) + 1
    session_clip: dict[str, int] = {}
    groups: list[tuple[int, bool, list[TextRecord]]] = []
    for record in records:
        if record.session is None:
            groups.append((next_clip, False, [record]))
            next_clip += 1
            continue
        if record.session not in session_clip:
            known = store.session_clip(video_id, record.session)
            if known is None:
                known, next_clip = next_clip, next_clip + 1
                groups.append((known, False, []))
            else:
                groups.append((known, True, []))
            session_clip[record.session] = known
        clip = session_clip[record.session]
        group = next(g for g in reversed(groups) if g[0] == clip)
        group[2].append(record)
    return groups


def _write_piece(writer: MemoryWriter, video_id: int, clip: int, append: bool, records: list[TextRecord],
                 vectors: Iterator[np.ndarray], kind: NodeKind, speakers: dict[str, int]) -> dict[str, int]:
    """One transaction: ``records`` as lines of ``clip``, each linked to its speaker; the speakers' node ids."""
    with writer.clip(video_id, clip, *clip_span(writer.store, video_id, clip), append=append) as batch:
        ids: dict[str, int] = {}
        for record in records:
            links = ()
            if record.speaker:
                if record.speaker not in ids:
                    ids[record.speaker] = batch.speaker(record.speaker, speakers.get(record.speaker))
                links = (ids[record.speaker],)
            write = batch.procedural if kind is NodeKind.PROCEDURAL else batch.episodic
            write(record.line(), vector=next(vectors), meta=record.meta(), links=links)
    return ids
