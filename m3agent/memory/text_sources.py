"""Text memories on the video core: a conversation or a document stored like a video.

A text source is a video row whose clips are sessions: the records of one session (or, without
sessions, each record) form one clip, so search, as-of queries (``before_clip``) and the control
process work unchanged. A record becomes one line, ``[time] speaker: text``, with its id, time,
speaker and session kept in the line's metadata; a speaker is an entity node its lines link to.
Records are stored once per id: giving the same file again adds nothing. Procedural records (what
worked, what a user corrected) are lines of their own kind, searched only when asked for.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from m3agent.errors import M3AgentError
from m3agent.memory.model import NodeKind
from m3agent.memory.store import SQLiteStore
from m3agent.memory.writer import MemoryWriter

EMBED_BATCH = 256


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
    text = value.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"record {rid!r} has no \"text\"")
    optional = {}
    for key in ("time", "speaker", "session"):
        item = value.get(key)
        if item is None or item == "":
            continue
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise ValueError(f"record {rid!r}: {key!r} must be text or a number")
        optional[key] = " ".join(str(item).split())
    return TextRecord(str(rid).strip(), " ".join(text.split()), **optional)


def read_records(path: str | os.PathLike[str]) -> tuple[list[TextRecord], list[tuple[int, str]]]:
    """Records of a JSON-lines file, and ``(line number, reason)`` of each line that is not one (they are
    skipped: one bad line loses nothing else)."""
    try:
        with open(path, encoding="utf-8") as fh:
            raw = fh.read()
    except FileNotFoundError as exc:
        raise RecordError(f"records file not found: {path}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordError(f"cannot read records file {path}: {exc}") from exc
    records, problems = [], []
    for number, text in enumerate(raw.splitlines(), start=1):
        if not text.strip():
            continue
        try:
            records.append(parse_record(json.loads(text)))
        except json.JSONDecodeError as exc:
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
    with writer.clip(video_id, clip, float(clip), float(clip + 1), append=True) as batch:
        node = batch.procedural(text, vector=embed([text])[0], meta=meta)
    return node


@dataclass
class RememberReport:
    source: str
    added: int = 0
    already: int = 0  # records whose id was stored before (or repeated in the input)
    clips: list[int] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"source": self.source, "added": self.added, "already_stored": self.already,
                "clips": len(self.clips)}


def remember_records(store: SQLiteStore, writer: MemoryWriter, embed: Callable[[Sequence[str]], np.ndarray],
                     source: str, records: Iterable[TextRecord], *, kind: NodeKind = NodeKind.EPISODIC,
                     progress: Callable[[int], None] | None = None) -> RememberReport:
    """Store records as lines of ``source`` (created if new), one transaction per clip, so an interrupted
    run resumes by being run again."""
    if kind not in (NodeKind.EPISODIC, NodeKind.PROCEDURAL):
        raise ValueError(f"records are stored as episodic or procedural lines, not {kind.label}")
    video_id = text_source(store, writer, source)
    report = RememberReport(source)
    fresh: list[TextRecord] = []
    seen: set[str] = set()
    records = list(records)
    stored = store.record_nodes(video_id, [r.id for r in records])
    for record in records:
        if record.id in stored or record.id in seen:
            report.already += 1
            continue
        seen.add(record.id)
        fresh.append(record)
    if not fresh:
        return report
    next_clip = store.last_clip(video_id) + 1
    session_clip: dict[str, int] = {}
    groups: list[tuple[int, bool, list[TextRecord]]] = []  # (clip, clip already stored, records)
    for record in fresh:
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
    speakers = store.speakers(video_id)
    for start in range(0, len(groups), 64):  # embed many lines at once, commit clip by clip
        chunk = groups[start : start + 64]
        texts = [r.line() for _, _, recs in chunk for r in recs]
        vectors = iter(embed(texts)) if texts else iter(())
        for clip, stored_clip, recs in chunk:
            with writer.clip(video_id, clip, float(clip), float(clip + 1), append=stored_clip) as batch:
                ids: dict[str, int] = {}
                for record in recs:
                    links = ()
                    if record.speaker:
                        if record.speaker not in ids:
                            ids[record.speaker] = batch.speaker(record.speaker, speakers.get(record.speaker))
                        links = (ids[record.speaker],)
                    if kind is NodeKind.PROCEDURAL:
                        batch.procedural(record.line(), vector=next(vectors), meta=record.meta(), links=links)
                    else:
                        batch.episodic(record.line(), vector=next(vectors), meta=record.meta(), links=links)
            speakers.update({name: node for name, node in ids.items()})
            report.added += len(recs)
            report.clips.append(clip)
            if progress is not None:
                progress(len(recs))
    return report
