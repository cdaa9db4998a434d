"""One clip through the perception backends: faces grouped into identities, speech transcribed and
attributed to voice identities. Node ids are decided here (existing) or by the graph (new).

A face smaller than ``face_min_embed_size`` is seen but never identified: its embedding would name the
wrong person as readily as the right one, so it is kept in ``ClipPerception.small_faces`` (counted and
timed, no embedding, no node) instead of founding or joining a face node."""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np

from m3agent.config import PerceptionConfig
from m3agent.media.clips import SAMPLE_RATE, MediaClip
from m3agent.perception.asr.base import ASRBackend
from m3agent.perception.faces.base import FaceBackend, FaceDetection, iou
from m3agent.perception.faces.changes import ChangedRegionLocator
from m3agent.perception.identity import Evidence, Fold, IdentityBank, cluster, cosine_distance
from m3agent.perception.screen_text import ScreenText, TextReading, read_clip_text
from m3agent.perception.shots import Shot, frame_motion, key_frames
from m3agent.perception.text.base import TextBackend
from m3agent.perception.voices.base import VoiceBackend

log = logging.getLogger(__name__)


@dataclass
class FaceTrack:
    """One person's faces in one clip."""

    detections: list[FaceDetection]
    node_id: int | None = None  # an existing face node, or None for a new one

    @property
    def embeddings(self) -> np.ndarray:
        return np.stack([d.embedding for d in self.detections if d.embedding.size])

    def visible(self, t0: float, t1: float, slack: float) -> bool:
        return any(t0 - slack <= d.time <= t1 + slack for d in self.detections)

    def spans(self, gap: float) -> list[tuple[float, float]]:
        times = sorted(d.time for d in self.detections)
        spans = [[times[0], times[0]]]
        for t in times[1:]:
            if t - spans[-1][1] <= gap:
                spans[-1][1] = t
            else:
                spans.append([t, t])
        return [(a, b) for a, b in spans]


@dataclass
class Utterance:
    start: float  # seconds in the video
    end: float
    text: str
    embedding: np.ndarray | None = None
    voice: int | None = None  # index into ClipPerception.voices
    face: int | None = None  # the face track alone on screen while it is spoken (ClipPerception.alone_on_screen)
    not_voices: frozenset[int] = frozenset()  # voice nodes it cannot be: each is seen speaking as another face


@dataclass
class VoiceTrack:
    utterances: list[Utterance]
    node_id: int | None = None

    @property
    def embeddings(self) -> np.ndarray:
        return np.stack([u.embedding for u in self.utterances])


@dataclass
class ClipPerception:
    clip: MediaClip
    faces: list[FaceTrack] = field(default_factory=list)
    utterances: list[Utterance] = field(default_factory=list)
    voices: list[VoiceTrack] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    small_faces: list[FaceDetection] = field(default_factory=list)  # seen, too small to identify
    shots: list[Shot] = field(default_factory=list)
    key_frames: list[int] = field(default_factory=list)  # indices into clip.frames: each shot's first frame
    texts: list[ScreenText] = field(default_factory=list)  # on-screen text (none without a text backend)
    text_reads: dict[str, int] = field(default_factory=dict)  # key frames and regions read, and left unread by the caps

    @property
    def small_face_count(self) -> int:
        """The most faces too small to identify on one frame: how many such people were at least there."""
        return max(Counter(d.frame_index for d in self.small_faces).values(), default=0)

    def single_faces(self, start: float, end: float) -> list[int]:
        """For each sampled frame inside [start, end] showing exactly one face, that face's track (an index
        into :attr:`faces`): who a voice speaking then may be seen as. Faces too small to identify do not count."""
        on_frame: dict[int, set[int]] = {}
        for index, track in enumerate(self.faces):
            for d in track.detections:
                on_frame.setdefault(d.frame_index, set()).add(index)
        return [next(iter(on_frame[i])) for i, t in enumerate(self.clip.frame_times)
                if start <= t <= end and len(on_frame.get(i, ())) == 1]

    def alone_on_screen(self, start: float, end: float) -> int | None:
        """The face track alone on screen while [start, end] is spoken, if every frame with one face shows the
        same one (None when no frame does, or two people took turns being alone)."""
        seen = set(self.single_faces(start, end))
        return next(iter(seen)) if len(seen) == 1 else None

    def small_face_spans(self, gap: float) -> list[tuple[float, float, int]]:
        """``(first, last, most on one frame)`` per stretch of frames showing faces too small to identify;
        frames further apart than ``gap`` seconds start a new stretch."""
        per_frame = Counter((d.frame_index, d.time) for d in self.small_faces)
        spans: list[list] = []
        for (_, t), n in sorted(per_frame.items(), key=lambda kv: kv[0][1]):
            if spans and t - spans[-1][1] <= gap:
                spans[-1][1], spans[-1][2] = t, max(spans[-1][2], n)
            else:
                spans.append([t, t, n])
        return [(a, b, n) for a, b, n in spans]


class Perceiver:
    def __init__(self, faces: FaceBackend, voices: VoiceBackend | None, asr: ASRBackend | None,
                 config: PerceptionConfig | None = None, text: TextBackend | None = None):
        self.faces, self.voices, self.asr, self.text = faces, voices, asr, text
        self.config = config or PerceptionConfig()
        self._embedding = threading.Lock()
        self._embeddings: OrderedDict[tuple, np.ndarray] = OrderedDict()  # see ``_embed``
        # the upcoming clips' work, queued or under way (faces: as many threads as the backend lets run at
        # once, so two clips' faces may be under way; speech: see ``_hear``)
        self._ahead: list[_Sensing] = []
        self._workers: dict[str, object] = {}  # stage -> its thread pool, made at first use (see ``_worker``)
        self.face_threshold = self.config.face_distance or faces.same_person_distance
        match_cosine = self.config.voice_cosine or (voices.same_speaker_cosine if voices else 0.53)
        self.voice_threshold = 1.0 - match_cosine
        self.voice_pair_threshold = 1.0 - max(match_cosine, getattr(voices, "pair_cosine", 0.0))

    def face_bank(self, snapshots: dict[int, np.ndarray]) -> IdentityBank:
        return IdentityBank(self.face_threshold, self.faces.distance, snapshots)

    def face_identity(self) -> dict:
        """How far two faces of one person may be, and measured how: memory keeps it with the video so that
        ``characters --check`` judges a face node by the memorizer's own scale."""
        return {"metric": self.faces.metric, "threshold": self.face_threshold}

    def voice_bank(self, snapshots: dict[int, np.ndarray]) -> IdentityBank:
        return IdentityBank(self.voice_threshold, cosine_distance, snapshots, linkage="average")

    def voice_twins(self, bank: IdentityBank, evidence: Evidence) -> list[Fold]:
        """Voice nodes of a video that are one speaker: ``Fold(gone, into)`` with what it was decided on.
        A pair with any evidence against it in memory (:meth:`Evidence.against`) is never folded, however
        alike it sounds; a pair linked to one face folds at the matching threshold, a pair without faces at
        ``voice_face_margin`` closer (a fold undoes a decision already written)."""
        margin = self.config.voice_face_margin

        def threshold(a: int, b: int) -> float:
            if evidence.against(a, b):
                return -1.0
            shared = evidence.faces.get(a, frozenset()) & evidence.faces.get(b, frozenset())
            return self.voice_threshold - (0.0 if shared else margin)

        folds = []
        for gone, into in bank.twins(threshold):
            record = {"cosine": round(1.0 - bank.gap(bank.snapshots[min(gone, into)], max(gone, into)), 4),
                      "needed": round(1.0 - threshold(gone, into), 4), **evidence.checked(gone, into)}
            folds.append(Fold(gone, into, record))
        return folds

    def perceive(self, clip: MediaClip, face_bank: IdentityBank, voice_bank: IdentityBank,
                 on_stage: Callable[[str], None] | None = None,
                 upcoming: MediaClip | Sequence[MediaClip] | None = None,
                 voice_faces: Mapping[int, frozenset[int]] | None = None) -> ClipPerception:
        """Faces and speech of ``clip`` in worker threads (the native libraries release the GIL, so the
        halves share the cores), then identities from the banks. ``upcoming``: the clips that come next, in
        order, if known (one or two): the next clip's face detection is queued behind this clip's, so the
        worker that finishes first goes on to it instead of waiting; speech is recognised two clips at a
        time (:meth:`_hear`), the next pair as soon as both its clips are known. ``on_stage`` hears each
        stage's name as it starts ("faces", "text", "speech", "voices"; stages that started ahead are told at once).
        ``voice_faces``: the face nodes memory links each voice node to (Equivalence): a voice speaking while
        another face is alone on screen is not that voice (a cannot-link, never a margin)."""
        upcoming = [] if upcoming is None else [upcoming] if isinstance(upcoming, MediaClip) else list(upcoming)
        ahead = {id(s.clip): s for s in self._ahead}
        sensing = ahead.pop(id(clip), None) or _Sensing(clip)
        later = [ahead.pop(id(u), None) or _Sensing(u) for u in upcoming]
        for gone in ahead.values():  # queued for clips that no longer come next
            gone.cancel()
        for s in [sensing] + later[:1]:
            if s.faces is None:
                s.faces = self._worker("faces", self.faces.concurrency).submit(self._timed_faces, s.clip, s)
            if s.sight is None:
                s.sight = self._worker("text").submit(self._timed_sight, s.clip, s)
        chain = [s for s in [sensing] + later if self._hears(s.clip)]
        i = 0
        while i < len(chain):
            if chain[i].speech is not None:
                i += 1
                continue
            partner = chain[i + 1] if i + 1 < len(chain) and chain[i + 1].speech is None else None
            if partner is None and chain[i] is not sensing:
                break  # an upcoming clip waits to be paired with the one after it (or is heard on its own turn)
            self._hear([chain[i]] + ([partner] if partner is not None else []))
            i += 1 if partner is None else 2
        self._ahead = later
        if on_stage is not None:
            sensing.listen(on_stage)
        out = ClipPerception(clip)
        (detections, out.small_faces), seconds = sensing.faces.result()
        t = time.perf_counter()
        out.faces = self._face_tracks(detections, face_bank)
        out.seconds["faces"] = seconds + time.perf_counter() - t
        out.shots, out.key_frames, reading, out.seconds["text"] = sensing.sight.result()
        out.texts = reading.texts
        if self.text is not None:
            out.text_reads = {"key_frames": reading.frames_read, "regions": reading.regions_read,
                              "unread": reading.unread_frames + reading.unread_regions}
        if sensing.speech is not None:
            out.utterances, usable, asr_s, voices_s = sensing.speech.result()
            out.seconds["asr"] = asr_s
            if self.voices is not None:
                t = time.perf_counter()
                _who_is_seen(out, usable, voice_faces or {})
                out.voices = self._voice_tracks(usable, voice_bank)
                out.seconds["voices"] = voices_s + time.perf_counter() - t
        return out

    def _hears(self, clip: MediaClip) -> bool:
        return self.asr is not None and bool(clip.audio.size)

    def _hear(self, sensings: list[_Sensing]) -> None:
        """Queue the speech of these clips (two that come one after the other) as one job: the recogniser packs
        their stretches of speech into as few windows as hold them (two clips' speech often fits one 30-s
        window: a third less time), then the voices are embedded clip by clip. Pairs are formed in the order
        clips come, from the first clip perceived, so a run gives the same pairs every time."""
        job = self._worker("speech", self.asr.concurrency).submit(self._speech, sensings)
        for index, sensing in enumerate(sensings):
            sensing.speech = _Part(job, index)

    def _worker(self, name: str, threads: int = 1):
        if name not in self._workers:
            from concurrent.futures import ThreadPoolExecutor

            self._workers[name] = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=f"m3-{name}")
        return self._workers[name]

    def close(self) -> None:
        """Stop the stages' threads (work queued ahead for clips nobody will ask for is dropped); a later
        ``perceive`` starts them again."""
        workers, self._workers = self._workers, {}
        self._ahead.clear()
        for pool in workers.values():
            pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> Perceiver:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _timed_faces(self, clip: MediaClip, sensing: _Sensing):
        sensing.stage("faces")
        t = time.perf_counter()
        found = self._detect_and_embed(clip)
        return found, time.perf_counter() - t

    def _timed_sight(self, clip: MediaClip, sensing: _Sensing) -> tuple[list[Shot], list[int], TextReading, float]:
        """Shots and key frames of ``clip``, and its on-screen text when a text backend is set."""
        t = time.perf_counter()
        motion = frame_motion(clip.frames, clip.frame_times)
        keys = key_frames(motion.shots, self.config.text_frames)
        reading = TextReading()
        if self.text is not None and clip.frames:
            sensing.stage("text")
            c = self.config
            reading = read_clip_text(clip.frames, clip.frame_times, motion, self.text, most_regions=c.text_regions,
                                     keys=keys)
            if reading.unread_frames or reading.unread_regions:
                log.info("clip %d: on-screen text read on %d key frames and %d changed regions; %d shots and %d "
                         "regions left unread (the caps memorize.perception.text_frames=%d, text_regions=%d)",
                         clip.index, reading.frames_read, reading.regions_read, reading.unread_frames,
                         reading.unread_regions, c.text_frames, c.text_regions)
        return motion.shots, keys, reading, time.perf_counter() - t

    def _speech(self, sensings: list[_Sensing]) -> list[tuple]:
        """For each clip: its utterances, those long enough to embed (embedded), and the seconds of recognition
        (the job's, shared by its clips' audio length) and of embedding."""
        for sensing in sensings:
            sensing.stage("speech")
        clips = [sensing.clip for sensing in sensings]
        t = time.perf_counter()
        heard = self.asr.transcribe_many([clip.audio for clip in clips], SAMPLE_RATE)
        asr_s = time.perf_counter() - t
        length = sum(clip.audio.size for clip in clips) or 1
        out = []
        for sensing, clip, segments in zip(sensings, clips, heard):
            utterances = [Utterance(clip.start + s.start, min(clip.end, clip.start + s.end), s.text) for s in segments]
            share = asr_s * clip.audio.size / length
            if self.voices is None:
                out.append((utterances, [], share, 0.0))
                continue
            sensing.stage("voices")
            t = time.perf_counter()
            usable = self._embed_utterances(clip, utterances)
            out.append((utterances, usable, share, time.perf_counter() - t))
        return out

    def _detect_and_embed(self, clip: MediaClip) -> tuple[list[list[FaceDetection]], list[FaceDetection]]:
        """Faces of every frame, linked into short tracks by box overlap between consecutive frames,
        and apart from them the faces too small to identify (never embedded, never tracked).

        Embedding is the expensive step, so only a track's first and last faces are embedded;
        if those disagree (one person replaced another in place), the track is cut where the person
        changes (see ``_split``).
        """
        tracks: list[list[FaceDetection]] = []
        small: list[FaceDetection] = []
        previous: list[tuple[FaceDetection, list[FaceDetection]]] = []
        locate = self.faces.locate
        if self.config.face_search_changes and self.faces.local:
            locate = ChangedRegionLocator(self.faces).locate
        for i, (frame, ft) in enumerate(zip(clip.frames, clip.frame_times)):
            current = []
            for box, score in locate(frame):
                det = self.faces.detection(frame, box, score, i, ft, None)
                if det.size < self.config.face_min_embed_size:
                    small.append(det)
                    continue
                det.frame = frame  # released once embedded
                match = max(previous, key=lambda p: iou(p[0].box, box), default=None)
                if match is not None and iou(match[0].box, box) >= 0.5:
                    track = match[1]
                    previous.remove(match)
                else:
                    track = []
                    tracks.append(track)
                track.append(det)
                current.append((det, track))
            previous = current
        tracks = [part for track in tracks for part in self._split(track)]
        for track in tracks:
            for det in track:
                det.__dict__.pop("frame", None)
        return tracks, small

    def _split(self, track: list[FaceDetection]) -> list[list[FaceDetection]]:
        """``track`` as runs whose first and last faces are one person: where its ends disagree, the
        change is found by bisection (a few embeddings, not every face of a long track)."""
        first, last = track[0], track[-1]
        self._embed(first)
        self._embed(last)
        if len(track) == 1 or self._same(first, last):
            return [track]
        lo, hi = 0, len(track) - 1  # track[lo] is the first person, track[hi] is not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            self._embed(track[mid])
            lo, hi = (mid, hi) if self._same(first, track[mid]) else (lo, mid)
        return [track[: lo + 1]] + self._split(track[hi:])

    def _same(self, a: FaceDetection, b: FaceDetection) -> bool:
        return float(self.faces.distance(a.embedding, b.embedding)[0, 0]) <= self.face_threshold

    def _embed(self, det: FaceDetection) -> None:
        """Embed ``det`` unless it is; a local backend's embedding of pixels seen before is reused (a face
        that did not move between a track's ends, or between clips, is embedded once)."""
        if det.embedding.size:
            return
        if not self.faces.local:
            with self._embedding:
                det.embedding = self.faces.embed(det.frame, det.box)
            return
        left, top, right, bottom = det.box
        w, h = right - left, bottom - top  # the encoder looks at most half a face beyond the box
        area = det.frame[max(0, top - h) : bottom + h, max(0, left - w) : right + w]
        key = (det.box, det.frame.shape, hashlib.blake2b(np.ascontiguousarray(area).data, digest_size=16).digest())
        with self._embedding:  # two clips' faces may be under way; embedders are not assumed thread-safe
            if key in self._embeddings:
                self._embeddings.move_to_end(key)
            else:
                self._embeddings[key] = self.faces.embed(det.frame, det.box)
                if len(self._embeddings) > 256:
                    self._embeddings.popitem(last=False)
            det.embedding = self._embeddings[key]

    def _face_tracks(self, tracks: list[list[FaceDetection]], bank: IdentityBank) -> list[FaceTrack]:
        embedded = [(t, d) for t, track in enumerate(tracks) for d in track if d.embedding.size]
        if not embedded:
            return []
        # two tracks on screen at once are two people, however alike (twins, a photo of someone beside them)
        shown = [{d.frame_index for d in track} for track in tracks]
        owners = [t for t, _ in embedded]
        together = np.array([[a != b and bool(shown[a] & shown[b]) for b in owners] for a in owners])
        groups = cluster(np.stack([d.embedding for _, d in embedded]), self.face_threshold, self.faces.distance,
                         cannot=together)
        label_of = {id(embedded[i][1]): g for g, members in enumerate(groups) for i in members}
        people: dict[int, list[FaceDetection]] = {}
        for track in tracks:
            labels = [label_of[id(d)] for d in track if d.embedding.size]
            if len(set(labels)) == 1:  # the whole track is one person
                people.setdefault(labels[0], []).extend(track)
            else:  # grouping split the track: each face goes with the last embedded face up to it
                label = labels[0]
                for d in track:
                    label = label_of.get(id(d), label)
                    people.setdefault(label, []).append(d)
        faces = [FaceTrack(sorted(dets, key=lambda d: d.frame_index)) for _, dets in sorted(people.items())]
        return _assign(faces, bank, apart=_on_screen_together)

    def _embed_utterances(self, clip: MediaClip, utterances: list[Utterance]) -> list[Utterance]:
        """The utterances long enough to tell a voice by, each given its voice embedding."""
        usable = []
        for u in utterances:
            if u.end - u.start < self.config.min_segment_seconds:
                continue
            a = int((u.start - clip.start) * SAMPLE_RATE)
            b = int((u.end - clip.start) * SAMPLE_RATE)
            seg = clip.audio[max(0, a) : b]
            if seg.size < self.config.min_segment_seconds * SAMPLE_RATE * 0.8:
                continue
            u.embedding = self.voices.embed(seg, SAMPLE_RATE)
            usable.append(u)
        return usable

    def _voice_tracks(self, usable: list[Utterance], bank: IdentityBank) -> list[VoiceTrack]:
        if not usable:
            return []
        # a known voice is recognised segment by segment against all its node keeps; only the rest is grouped
        # (two single segments are weak evidence: grouping first let one speaker's fragment ride along with
        # another's sentence into the wrong node)
        # two utterances spoken while two different faces were alone on screen are two people, whatever their
        # voices sound like (two male voices of one synthesizer are closer than the threshold): a voice node
        # takes no utterance seen as another face than its own (``not_voices``), a group none seen as two faces
        known: dict[int, VoiceTrack] = {}
        rest = []
        for u in usable:
            node = bank.match(u.embedding[None], taken=u.not_voices)
            if node is None:
                rest.append(u)
            else:
                known.setdefault(node, VoiceTrack([], node)).utterances.append(u)
        for node, track in known.items():  # a node heard as two faces here keeps the face it is seen as most
            faces = Counter(u.face for u in track.utterances if u.face is not None)
            if len(faces) > 1:
                face = max(faces.items(), key=lambda kv: (kv[1], -kv[0]))[0]
                for u in [u for u in track.utterances if u.face not in (None, face)]:
                    track.utterances.remove(u)
                    u.not_voices = u.not_voices | {node}
                    rest.append(u)
        tracks = list(known.values())
        if rest:
            seen_as = [u.face for u in rest]
            apart = np.array([[a is not None and b is not None and a != b for b in seen_as] for a in seen_as])
            groups = cluster(np.stack([u.embedding for u in rest]), self.voice_pair_threshold, cosine_distance,
                             cannot=apart)
            taken = {node: {u.face for u in tr.utterances} - {None} for node, tr in known.items()}
            for track in _assign([VoiceTrack([rest[i] for i in g]) for g in groups], bank,
                                 forbidden=lambda tr: _not_voices(tr, taken), apart=_seen_apart):
                if track.node_id in known:  # together the rest matched a voice already heard here
                    known[track.node_id].utterances.extend(track.utterances)
                else:
                    tracks.append(track)
        # a short fragment (a sentence cut by the clip boundary) may join a known voice, never found one
        tracks = [tr for tr in tracks if tr.node_id is not None or
                  sum(u.end - u.start for u in tr.utterances) >= self.config.min_new_voice_seconds]
        for u in usable:
            u.voice = None
        for index, track in enumerate(tracks):
            for u in track.utterances:
                u.voice = index
        return tracks


@dataclass
class _Sensing:
    """One clip's bank-free work, queued or under way in the perceiver's workers. Stages are recorded
    as they start so that whoever attaches later still hears them."""

    clip: MediaClip
    faces: Future | None = None
    sight: Future | None = None  # shots, key frames and on-screen text
    speech: _Part | None = None
    started: list[str] = field(default_factory=list)
    listener: Callable[[str], None] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def stage(self, name: str) -> None:
        with self.lock:
            self.started.append(name)
            listener = self.listener
        if listener is not None:
            listener(name)

    def listen(self, listener: Callable[[str], None]) -> None:
        with self.lock:
            self.listener, started = listener, list(self.started)
        for name in started:
            listener(name)

    def cancel(self) -> None:
        for job in (self.faces, self.sight):
            if job is not None:
                job.cancel()  # its speech is the job of the clip before it too: that one goes on


@dataclass
class _Part:
    """One clip's part of a speech job that covers several clips."""

    job: Future
    index: int

    def result(self):
        return self.job.result()[self.index]


def _who_is_seen(perception: ClipPerception, usable: list[Utterance],
                 voice_faces: Mapping[int, frozenset[int]]) -> None:
    """Each utterance's face alone on screen, and the voice nodes it cannot be: those memory links only to
    other faces (a face new to memory is none of them)."""
    for u in usable:
        u.face = perception.alone_on_screen(u.start, u.end)
        if u.face is None:
            continue
        node = perception.faces[u.face].node_id
        u.not_voices = frozenset(v for v, faces in voice_faces.items() if faces and node not in faces)


def _on_screen_together(a: FaceTrack, b: FaceTrack) -> bool:
    """Two faces on one frame: two people, even if both match one node best."""
    return bool({d.frame_index for d in a.detections} & {d.frame_index for d in b.detections})


def _seen_apart(a: VoiceTrack, b: VoiceTrack) -> bool:
    """Two groups of utterances each seen as a face alone on screen, never the same one: two people."""
    fa, fb = {u.face for u in a.utterances} - {None}, {u.face for u in b.utterances} - {None}
    return bool(fa and fb and not fa & fb)


def _not_voices(track: VoiceTrack, taken: Mapping[int, set[int]]) -> frozenset[int]:
    """Nodes a group of utterances cannot be: any node one of them cannot be, and a node this clip already hears
    as a face the group is not seen as."""
    faces = {u.face for u in track.utterances} - {None}
    ruled_out = set().union(*(u.not_voices for u in track.utterances))
    return frozenset(ruled_out | {node for node, seen in taken.items() if faces and seen and not seen & faces})


def _assign(tracks, bank: IdentityBank, forbidden: Callable[[object], frozenset[int]] | None = None,
            apart: Callable[[object, object], bool] | None = None):
    """Match tracks to nodes; two tracks matching one node are one identity and merge, unless ``apart`` says
    they are two people (the second then takes its next best node, or a new one). ``forbidden`` names the nodes
    a track cannot be (cannot-link evidence)."""
    by_node: dict[int, object] = {}
    out = []
    for track in sorted(tracks, key=lambda tr: -len(tr.embeddings)):
        ruled_out = set(forbidden(track)) if forbidden else set()
        node = bank.match(track.embeddings, taken=ruled_out)
        while node is not None and node in by_node and apart is not None and apart(by_node[node], track):
            ruled_out.add(node)
            node = bank.match(track.embeddings, taken=ruled_out)
        if node is not None and node in by_node:
            kept = by_node[node]
            if hasattr(kept, "detections"):
                kept.detections.extend(track.detections)
            else:
                kept.utterances.extend(track.utterances)
            continue
        track.node_id = node
        if node is not None:
            by_node[node] = track
        out.append(track)
    return out

