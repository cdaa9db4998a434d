"""Memorization: a video becomes memory, one 30-s clip per transaction.

``memorize_video`` runs the pipeline: stream clips, perceive, pick persistent identities, describe
(a :class:`~m3agent.memorize.base.Memorizer`), commit. It resumes after the last stored clip, so an interrupted
run loses at most the clip in flight, and re-running a finished video does nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from m3agent.config import MemorizeConfig
from m3agent.files.private import open_private
from m3agent.media import MediaError, iter_clips, probe
from m3agent.media.clips import prefetch
from m3agent.media.fingerprint import content_fingerprint
from m3agent.media.jpeg import encode_jpeg
from m3agent.memorize.base import Memorizer
from m3agent.memorize.on_screen import continue_texts, screen_text_line
from m3agent.memory.graph import MemoryGraph
from m3agent.memory.model import NodeKind
from m3agent.perception.identity import Evidence
from m3agent.perception.pipeline import ClipPerception, Perceiver

log = logging.getLogger(__name__)


@dataclass
class MemorizeReport:
    video: str
    video_id: int
    clips_total: int  # the header's count; when the header gives no duration, the clips the streams held
    clips_done: int = 0
    clips_skipped: int = 0
    seconds: float = 0.0
    stage_seconds: dict[str, float] = field(default_factory=dict)
    truncated: bool = False  # the file ends early (cut short or damaged): ``note`` says where
    duration: float = 0.0  # the header's (0.0: it gives none)
    media_seconds: float = 0.0  # video memorized by this run
    ends_at: float | None = None  # where a truncated file's data ends (None: nothing readable was left)
    note: str = ""  # one human-readable line on a truncated file

    @property
    def realtime_factor(self) -> float:
        return self.media_seconds / self.seconds if self.seconds > 0 else 0.0

    def mark_truncated(self, ends_at: float | None, read_from: float) -> None:
        """Say that the file ends at ``ends_at`` (None: nothing could be decoded from ``read_from`` on),
        short of its header's duration or with a decode error, and how much of it memory holds."""
        self.truncated, self.ends_at = True, ends_at
        where = f"ends at {ends_at:.1f} s" if ends_at is not None else f"has nothing readable after {read_from:.1f} s"
        of = f" of {self.duration:.1f} s" if self.duration > 0 else ""
        self.note = (f"{where}{of} (truncated or damaged); memorized {self.clips_skipped + self.clips_done} of "
                     f"{self.clips_total} clips")

    def to_dict(self) -> dict:
        out = {"video": self.video, "video_id": self.video_id, "clips_total": self.clips_total,
               "clips_done": self.clips_done, "clips_skipped": self.clips_skipped,
               "seconds": round(self.seconds, 3), "realtime_factor": round(self.realtime_factor, 2),
               "stage_seconds": {k: round(v, 3) for k, v in self.stage_seconds.items()},
               "truncated": self.truncated}
        if self.truncated:
            out.update(ends_at=round(self.ends_at, 3) if self.ends_at is not None else None, note=self.note)
        return out


class MemorizationInterrupted(KeyboardInterrupt):
    """Ctrl-C during a memorization; ``report`` tells how far it got (every clip before it is stored)."""

    def __init__(self, report: MemorizeReport):
        super().__init__()
        self.report = report


def _crop_quality(det) -> float:
    return float(det.score) * float(np.log1p(det.size)) * float(np.log1p(det.sharpness))


#: upcoming clips handed to the perceiver: the next one's faces, and the speech of the next pair (recognised in
#: one pass) start while this clip is perceived. Measured on 2 cores: 2 gave 14.6x real time, 3 (two speech
#: pairs under way at once) 13.9x: the cores are already busy, and each decoded clip holds its frames in memory
CLIPS_AHEAD = 2


def memorize_video(path: str | os.PathLike[str], graph: MemoryGraph, perceiver: Perceiver, memorizer: Memorizer,
                   config: MemorizeConfig | None = None, *, name: str | None = None, log_path: str | None = None,
                   progress: bool = True, on_event: Callable[[dict], None] | None = None) -> MemorizeReport:
    """``on_event`` hears the run as it goes (see :mod:`m3agent.memorize.progress`): "start", then per clip
    each "stage" as it starts and a "clip" when it is stored, then "done" with the report."""
    config = config or MemorizeConfig()
    emit = on_event or (lambda event: None)
    pc = config.perception
    info = probe(path)
    if not info.has_video and not info.has_audio:
        raise MediaError(f"{path} has nothing to memorize")
    video_id = graph.claim_video(name or Path(path).name, content_fingerprint(path), name_given=name is not None,
                                 path=str(Path(path).resolve()), duration=info.duration,
                                 clip_seconds=pc.clip_seconds,
                                 meta={"width": info.width, "height": info.height, "fps": info.fps,
                                       "has_audio": info.has_audio, "face_identity": perceiver.face_identity()})
    video = graph.resolve_video(video_id)
    name = video.name
    if video.clip_seconds != pc.clip_seconds:  # resumed: the clips already stored fix the length of the rest
        log.warning("%s was memorized in %g-s clips; it goes on in %g-s clips, not the configured %g", name,
                    video.clip_seconds, video.clip_seconds, pc.clip_seconds)
        pc = dataclasses.replace(pc, clip_seconds=video.clip_seconds)
    n_clips = info.n_clips(pc.clip_seconds)  # None: no duration in the header, the streams will tell
    report = MemorizeReport(name, video_id, n_clips or 0, duration=info.duration)
    done = {c.id for c in graph.clips(video_id)}
    first = 0
    while first in done:
        first += 1
    report.clips_skipped = len(done)
    emit({"event": "start", "video": name, "clips_total": n_clips, "clips_done": len(done),
          "duration": info.duration})
    if n_clips is not None and first >= n_clips:
        emit({"event": "done", **report.to_dict()})
        return report
    face_bank = perceiver.face_bank(graph.entity_snapshots(NodeKind.FACE, video_id))
    voice_bank = perceiver.voice_bank(graph.entity_snapshots(NodeKind.VOICE, video_id))
    log_file = open_private(log_path, "a", encoding="utf-8") if log_path else None
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=n_clips, initial=first, unit="clip", desc=name[:30], dynamic_ncols=True)
    started = time.perf_counter()
    try:
        stream = iter_clips(path, pc.clip_seconds, pc.fps, start_clip=first, max_side=pc.max_side, info=info,
                            decoder=pc.decoder)
        clips = (clip for clip in prefetch(stream) if clip.index not in done)
        queued: deque = deque()  # this clip and the ones after it (decoded meanwhile; see Perceiver.perceive)
        while True:
            emit({"event": "stage", "clip": first + report.clips_done, "stage": "decode"})
            t0 = time.perf_counter()
            # the first clip starts as soon as it and the next are decoded; later ones see CLIPS_AHEAD coming
            while len(queued) < (1 + CLIPS_AHEAD if report.clips_done else 2):
                coming = next(clips, None)
                if coming is None:
                    break
                queued.append(coming)
            if not queued:
                break
            clip = queued.popleft()
            upcoming = list(queued)  # their perception starts once a worker is free
            stages = {"decode (wait)": time.perf_counter() - t0}
            perception = perceiver.perceive(
                clip, face_bank, voice_bank, upcoming=upcoming, voice_faces=voice_faces(graph, video_id, voice_bank),
                on_stage=lambda stage, index=clip.index: emit({"event": "stage", "clip": index, "stage": stage}))
            stages.update(perception.seconds)
            emit({"event": "stage", "clip": clip.index, "stage": "memorize"})
            t = time.perf_counter()
            _commit_clip(graph, video_id, perception, memorizer, config, perceiver, face_bank, voice_bank, stages)
            stages["memorize+write"] = time.perf_counter() - t - stages.get("describe", 0.0)
            for key, value in stages.items():
                report.stage_seconds[key] = report.stage_seconds.get(key, 0.0) + value
            report.clips_done += 1
            report.media_seconds += clip.duration
            if log_file:
                try:
                    log_file.write(json.dumps({"video": name, "clip": clip.index, "start": clip.start, "end": clip.end,
                                               "faces": len(perception.faces), "small_faces": perception.small_face_count,
                                               "utterances": len(perception.utterances),
                                               "texts": len(perception.texts), "text_reads": perception.text_reads,
                                               "seconds": {k: round(v, 4) for k, v in stages.items()}}) + "\n")
                    log_file.flush()
                except OSError as exc:  # the timing log is a convenience: a full disk must not stop the run
                    log.warning("cannot write the memorization log %s (%s); going on without it", log_path, exc)
                    with contextlib.suppress(OSError):
                        log_file.close()
                    log_file = None
            emit({"event": "clip", "clip": clip.index, "clips_done": report.clips_skipped + report.clips_done,
                  "clips_total": n_clips, "start": clip.start, "end": clip.end,
                  "realtime_factor": round(report.media_seconds / max(time.perf_counter() - started, 1e-9), 3),
                  "seconds": {k: round(v, 4) for k, v in stages.items()}})
            if bar:
                bar.update(1)
        if n_clips is None:  # the streams have ended: now the count and the duration are known
            report.clips_total = max(first, stream.next_index)
            if stream.end:
                graph.add_video(name, duration=stream.end, clip_seconds=pc.clip_seconds)
        if stream.truncated:
            report.mark_truncated(stream.end, first * pc.clip_seconds)
    except KeyboardInterrupt as exc:
        raise MemorizationInterrupted(report) from exc
    finally:
        report.seconds = time.perf_counter() - started
        if bar:
            bar.close()
        if log_file:
            log_file.close()
    emit({"event": "done", **report.to_dict()})
    return report


def _commit_clip(graph, video_id, perception: ClipPerception, memorizer: Memorizer, config: MemorizeConfig,
                 perceiver: Perceiver, face_bank, voice_bank, stages: dict[str, float]) -> None:
    clip = perception.clip
    if perception.texts and clip.index > 0:  # texts still on screen from the clip before continue its lines
        before = graph.clip_live_lines(video_id, clip.index - 1, containing='The text "')
        continue_texts(perception, [(n.id, n.text) for n in before], clip.start)
    continuing = [t for t in perception.texts if t.replaces is not None]
    # a continued text's longer line replaces the shorter in the clip's own transaction (``editing``)
    with graph.editing() if continuing else contextlib.nullcontext():
        with graph.clip(video_id, clip.index, clip.start, clip.end) as batch:
            face_ids, written = _write_clip(batch, perception, memorizer, config, stages)
        for text in continuing:
            line = written.get(screen_text_line(text.text, text.since, text.end))
            if line is not None:
                graph.retire_lines([text.replaces], clip.index, by=line)
    # the next clips match identities against exactly what the memory now keeps (a resumed run reads
    # the same snapshots back from the store)
    for node, snapshots in batch.report.snapshots.items():
        (face_bank if node in face_ids else voice_bank).keep(node, snapshots)
    _undo_contradicted_folds(graph, video_id, voice_bank)
    _fold_voices(graph, video_id, clip.index, perceiver, voice_bank)


def _write_clip(batch, perception: ClipPerception, memorizer: Memorizer, config: MemorizeConfig,
                stages: dict[str, float]) -> tuple[list[int], dict[str, int]]:
    """The clip's identities and lines into ``batch``: the face node ids, and each episodic line's node id."""
    face_ids = []
    for track in perception.faces:
        dets = sorted(track.detections, key=_crop_quality, reverse=True)
        crops = [(encode_jpeg(d.crop), _crop_quality(d)) for d in dets[: config.crops_per_clip]]
        embedded = [d for d in dets if d.embedding.size]
        face_ids.append(batch.face([d.embedding for d in embedded], node_id=track.node_id, crops=crops,
                                   qualities=[_crop_quality(d) for d in embedded]))
    voice_ids = []
    for track in perception.voices:
        segs = [(u.start, u.end, u.text) for u in track.utterances]
        voice_ids.append(batch.voice(list(track.embeddings), node_id=track.node_id, segments=segs))
    t = time.perf_counter()
    lines = memorizer.describe(perception, face_ids, voice_ids)
    stages["describe"] = time.perf_counter() - t
    written = {text: batch.episodic(text) for text in lines.episodic}
    for text in lines.semantic:
        batch.semantic(text)
    return face_ids, written


def _undo_contradicted_folds(graph: MemoryGraph, video_id: int, voice_bank) -> None:
    """A fold this clip's lines contradict (the node now gives two names, or speaks as two faces alone on screen)
    is undone in memory; the bank then matches against both nodes' own snapshots again."""
    undone = graph.undo_contradicted_folds(video_id)
    if undone:
        kept = graph.entity_snapshots(NodeKind.VOICE, video_id)
        for node in {n for u in undone for n in (u["into"], u["node"])}:
            voice_bank.keep(node, kept.get(node, np.zeros((0, 0), np.float32)))


def voice_faces(graph: MemoryGraph, video_id: int, voice_bank) -> dict[int, frozenset[int]]:
    """The face nodes memory links each of the video's voice nodes to (its character's faces)."""
    cmap = graph.characters(video_id)
    out = {}
    for voice in voice_bank.snapshots:
        character = cmap.character_of(voice)
        members = cmap.members.get(character, []) if character is not None else []
        out[voice] = frozenset(m for m in members if cmap.kinds.get(m) is NodeKind.FACE)
    return out


def _fold_voices(graph: MemoryGraph, video_id: int, clip: int, perceiver: Perceiver, voice_bank) -> None:
    """Fold voice nodes that more speech has shown to be one speaker (checked over all the video's voices
    after every clip, so a run resumed after a crash catches up at its first clip). A pair with evidence
    against it in memory is never folded (see :meth:`Perceiver.voice_twins`); each fold keeps its evidence."""
    if len(voice_bank.snapshots) < 2:
        return
    voices = sorted(voice_bank.snapshots)
    heard = graph.sightings(video_id)
    evidence = Evidence(faces=voice_faces(graph, video_id, voice_bank),
                        clips={v: set(heard.get(v, ())) for v in voices}, names=graph.stated_names(video_id, voices),
                        apart=graph.kept_apart(video_id))
    folds = perceiver.voice_twins(voice_bank, evidence)
    if not folds:
        return
    snapshots = graph.fold_entities([(f.gone, f.into) for f in folds], clip,
                                    evidence={f.gone: f.evidence for f in folds})
    for fold in folds:
        log.info("voice %d is voice %d: folded at clip %d (%s)", fold.gone, fold.into, clip, fold.evidence)
        voice_bank.fold(fold.gone, fold.into, snapshots[fold.into])
