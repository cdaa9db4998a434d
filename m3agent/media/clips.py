"""Stream a video as consecutive clips: frames sampled at ``fps`` and 16 kHz mono float32 audio.

Video and audio are decoded by two sequential readers over the same file, so memory holds one
clip at a time whatever the video's length. Both keep to the file's timeline: frames are turned
upright as a player shows them, and every audio frame is placed at its own timestamp, so the holes
and overlaps of a joined file do not make speech drift (a hole becomes silence, samples that
overlap earlier ones are dropped). A header without a duration (a streamed WebM) is read until the
streams end. A file that ends early, with a decode error or its streams stopping short of the
header's duration, ends the stream after the last readable clip, which is marked ``truncated``;
the :class:`ClipStream` then says where the data ended.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field

import numpy as np

from m3agent.config import DEFAULT_CLIP_SECONDS
from m3agent.media.probe import VideoInfo, probe

log = logging.getLogger(__name__)
SAMPLE_RATE = 16_000
#: an audio timestamp this close to where the samples before it end continues them (codec and
#: container rounding); further off, the audio is placed anew at its timestamp
JITTER_SECONDS = 0.002
#: streams that stop further than this before the header's duration mean a truncated file; a whole
#: file's streams end within a frame or an audio packet of it
END_SLACK_SECONDS = 2.0
_SILENCE_BLOCK = 10 * SAMPLE_RATE  # a long hole in the audio is given out in blocks of this many samples


@dataclass
class MediaClip:
    index: int
    start: float
    end: float
    frames: list[np.ndarray] = field(default_factory=list)  # RGB uint8 (H, W, 3), upright
    frame_times: list[float] = field(default_factory=list)  # seconds in the video
    audio: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))  # 16 kHz mono
    truncated: bool = False

    @property
    def duration(self) -> float:
        return self.end - self.start


def _upright(image: np.ndarray, rotation: int) -> np.ndarray:
    """``image`` turned as a player turns it: ``rotation`` counter-clockwise degrees (a quarter-turn multiple)."""
    return np.ascontiguousarray(np.rot90(image, rotation // 90)) if rotation else image


def _video_frames(path: str, start: float, fps: float, max_side: int,
                  rotation: int = 0) -> Generator[tuple[float, np.ndarray], None, float | None]:
    """Frames at ``start + k / fps`` (nearest decoded frame at or after each target time), upright.
    Returns where the last decoded frame ends."""
    import av

    end = None
    with av.open(path) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        rate = float(stream.average_rate or 0)
        if rate and fps * 3 <= rate:
            # sampling far below the frame rate: frames no other frame refers to need no decoding
            stream.codec_context.skip_frame = "NONREF"
        if start > 0:
            container.seek(int(start * 1_000_000), any_frame=False, backward=True)
        step = 1.0 / fps
        target = start
        for frame in container.decode(stream):
            if frame.time is None:
                continue
            t = float(frame.time)
            shown = float(frame.duration * frame.time_base) if frame.duration and frame.time_base else 0.0
            end = max(end if end is not None else t, t + (shown or (1 / rate if rate else 0.0)))
            if t + 1e-6 < target:
                continue
            scale = min(1.0, max_side / max(frame.width, frame.height)) if max_side else 1.0
            if scale < 1.0:
                w = max(2, int(round(frame.width * scale / 2)) * 2)
                h = max(2, int(round(frame.height * scale / 2)) * 2)
                image = frame.to_ndarray(format="rgb24", width=w, height=h)
            else:
                image = frame.to_ndarray(format="rgb24")
            yield t, _upright(image, rotation)
            target = (math.floor((t - start) / step + 1e-6) + 1) * step + start
    return end


def _decord_frames(path: str, start: float, fps: float, max_side: int,
                   rotation: int = 0) -> Generator[tuple[float, np.ndarray], None, float | None]:
    """The same frames through decord (``pip install decord``), which seeks by index instead of
    decoding every frame: faster on long videos with sparse sampling, and the GPU build decodes on
    the device. decord (0.6) turns frames by the display matrix itself; a build that does not is
    caught by the shape of its frames on quarter turns, and those are turned here."""
    import decord

    probe_reader = decord.VideoReader(path, ctx=decord.cpu(0))
    h, w = probe_reader[0].shape[:2]
    if rotation in (90, 270) and h != w:
        import av

        with av.open(path) as container:
            stored = container.streams.video[0].codec_context
            rotation = rotation if (w, h) == (stored.width, stored.height) else 0
    elif rotation == 180:
        rotation = 0  # nothing to tell a turned frame by: trust the build (0.6 turns them)
    scale = min(1.0, max_side / max(h, w)) if max_side else 1.0
    size = {}
    if scale < 1.0:
        size = {"width": max(2, int(round(w * scale / 2)) * 2), "height": max(2, int(round(h * scale / 2)) * 2)}
    reader = decord.VideoReader(path, ctx=decord.cpu(0), **size) if size else probe_reader
    n, rate = len(reader), float(reader.get_avg_fps()) or 25.0
    k = 0
    while True:
        target = start + k / fps
        index = int(math.ceil(target * rate - 1e-6))
        if index >= n:
            return float(reader.get_frame_timestamp(n - 1)[1]) if n else None
        t = float(reader.get_frame_timestamp(index)[0])
        yield t, _upright(reader[index].asnumpy(), rotation)
        k += 1


def _on_grid(frame, t: float):
    """``frame`` with silence before it so that it starts where the input and the 16 kHz sample grids
    meet (every 1 / gcd(rate, 16000) s from time 0), and that start: a run of audio resampled from a
    seek point is then sampled at the same instants as a run from the start, so it gives the same
    samples."""
    import av

    rate = frame.sample_rate
    first = round(t * rate)
    pad = first % (rate // math.gcd(rate, SAMPLE_RATE))
    if not pad:
        return frame, first / rate
    data = frame.to_ndarray()  # (channels, n) when planar, (1, n * channels) when packed
    silence = np.full((data.shape[0], pad * data.shape[1] // frame.samples), 128 if data.dtype == np.uint8 else 0,
                      data.dtype)
    padded = av.AudioFrame.from_ndarray(np.concatenate([silence, data], axis=1), format=frame.format.name,
                                        layout=frame.layout.name)
    padded.sample_rate, padded.time_base = rate, frame.time_base
    if frame.pts is not None and frame.time_base:
        padded.pts = frame.pts - round(pad / rate / frame.time_base)
    return padded, (first - pad) / rate


class _Runs:
    """Decoded audio frames resampled to 16 kHz mono, with the time of every output chunk. Samples are
    counted from the timestamp of the frame that began their run; a new run (after flushing the
    resampler, whose buffered samples belong before the jump) begins at a frame whose timestamp jumps
    away from where the run has got to, or whose format changes."""

    def __init__(self, tolerance: float):
        self.tolerance = tolerance
        self.resampler, self.setup = None, None
        self.start, self.n_in, self.n_out = 0.0, 0, 0

    @property
    def expected(self) -> float | None:
        """The timestamp the run's next frame should have."""
        return self.start + self.n_in / self.setup[2] if self.setup else None

    @staticmethod
    def kind(frame) -> tuple:
        return frame.format.name, frame.layout.name, frame.sample_rate

    def continues(self, frame, t: float, after: int = 0) -> bool:
        """Whether ``frame`` at ``t`` goes on this run (after ``after`` more input samples)."""
        return self.setup == self.kind(frame) and abs(t - self.expected - after / frame.sample_rate) <= self.tolerance

    def add(self, frame, t: float, new_run: bool) -> list[tuple[float, np.ndarray]]:
        import av

        out = []
        if new_run:
            out = self.flush()
            frame, t = _on_grid(frame, t)
            self.resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
            self.setup, self.start, self.n_in, self.n_out = self.kind(frame), t, 0, 0
        out += self._timed(self.resampler.resample(frame))
        self.n_in += frame.samples
        return out

    def flush(self) -> list[tuple[float, np.ndarray]]:
        return self._timed(self.resampler.resample(None)) if self.resampler is not None else []

    def _timed(self, frames) -> list[tuple[float, np.ndarray]]:
        out = []
        for frame in frames:
            if frame is None:  # a pass-through resampler's flush
                continue
            samples = frame.to_ndarray().reshape(-1).astype(np.float32, copy=False)
            out.append((self.start + self.n_out / SAMPLE_RATE, samples))
            self.n_out += len(samples)
        return out


def _resampled(path: str, start: float) -> Iterator[tuple[float, np.ndarray]]:
    """(time of the first sample, 16 kHz mono float32 samples) from about ``start`` on, placed by the
    frames' timestamps. A timestamp more than the jitter away from where its run has got to starts a
    new run (a hole or an overlap where files were joined) only when the next frame follows it; when
    the next frame follows the old run instead, that one timestamp was off (Ogg Vorbis frames at a
    block size switch) and the frame stays in the run."""
    import av

    with av.open(path) as container:
        stream = container.streams.audio[0]
        if start > 0:
            container.seek(int(start * 1_000_000), any_frame=False, backward=True)
        runs = _Runs(tolerance=max(JITTER_SECONDS, 2 * float(stream.time_base or 0)))
        held = None  # (frame, time) of a frame whose timestamp jumped, until the next frame says how to take it
        for frame in container.decode(stream):
            t = float(frame.time) if frame.time is not None else runs.expected if runs.setup else start
            if held is not None:
                yield from runs.add(*held, new_run=not runs.continues(frame, t, after=held[0].samples))
                held = None
            if runs.setup is not None and runs.kind(frame) == runs.setup and not runs.continues(frame, t):
                held = (frame, t)
            else:
                yield from runs.add(frame, t, new_run=runs.setup != runs.kind(frame))
        if held is not None:
            yield from runs.add(*held, new_run=True)
        yield from runs.flush()


def _audio_chunks(path: str, start: float) -> Generator[tuple[int, np.ndarray], None, float | None]:
    """Contiguous 16 kHz samples from about ``start`` on, as (index of the first sample on the file's
    timeline, where sample i plays at i / 16000 s, samples): a hole between timestamps is given out as
    silence, and samples overlapping ones already given out are dropped (the earlier audio stays).
    Returns where the audio ends, in seconds."""
    position = None  # index of the next sample to give out
    for t, samples in _resampled(path, start):
        i = round(t * SAMPLE_RATE)
        if position is None:
            position = i
        while position < i:
            n = min(i - position, _SILENCE_BLOCK)
            yield position, np.zeros(n, np.float32)
            position += n
        samples = samples[position - i :]
        if samples.size:
            yield position, samples
            position += samples.size
    return position / SAMPLE_RATE if position is not None else None


def audio_excerpt(path: str | os.PathLike[str], start: float, end: float) -> np.ndarray:
    """16 kHz mono samples from ``start`` to ``end`` seconds on the file's timeline (a voice sample for
    people to listen to), read the way memorization reads audio."""
    start, end = max(0.0, float(start)), float(end)
    if end <= start:
        return np.zeros(0, np.float32)
    first, last = round(start * SAMPLE_RATE), round(end * SAMPLE_RATE)
    parts = []
    for i, samples in _audio_chunks(str(path), start):
        if i >= last:
            break
        lo, hi = max(first - i, 0), min(last - i, samples.size)
        if hi > lo:
            parts.append(samples[lo:hi])
    return np.concatenate(parts) if parts else np.zeros(0, np.float32)


class _Reader:
    """One decoding stream, one item ahead. A decode error part-way ends it and is kept in ``error``
    (what came before stays usable); ``end`` is where its data ended as far as it was read."""

    def __init__(self, items: Generator, item_end: Callable[[tuple], float]):
        self._items, self._item_end = items, item_end
        self._head, self.done, self.error, self.end = None, False, None, None

    def _reach(self, t: float | None) -> None:
        if t is not None:
            self.end = t if self.end is None else max(self.end, t)

    def peek(self):
        if self._head is None and not self.done:
            try:
                self._head = next(self._items)
            except StopIteration as stop:
                self.done = True
                self._reach(stop.value)
            except Exception as exc:  # decode error mid-file: stop this stream, keep what we have
                self.done, self.error = True, exc
            else:
                self._reach(self._item_end(self._head))
        return self._head

    def pop(self):
        head = self.peek()
        self._head = None
        return head

    def close(self) -> None:
        self._items.close()


class _ClipAudio:
    """The placed audio handed out clip by clip: samples ``lo:hi`` of the file's 16 kHz timeline, with
    silence where the audio starts late, and short where it has ended."""

    def __init__(self, reader: _Reader):
        self.reader = reader
        self.buffer, self.at = np.zeros(0, np.float32), None  # samples not handed out yet, the first one's index

    def take(self, lo: int, hi: int) -> np.ndarray:
        parts = [self.buffer]
        have = self.at + len(self.buffer) if self.at is not None else None
        while (have is None or have < hi) and self.reader.peek() is not None:
            at, samples = self.reader.pop()
            if self.at is None:
                self.at = have = at
            parts.append(samples)
            have += len(samples)
        joined = np.concatenate(parts)
        if self.at is None:  # no audio at all
            return joined
        if self.at >= hi:  # the audio starts after this clip
            self.buffer = joined
            return np.zeros(hi - lo, np.float32)
        if self.at > lo:  # the audio starts late: silence before it
            joined, self.at = np.concatenate([np.zeros(self.at - lo, np.float32), joined]), lo
        taken = joined[lo - self.at : hi - self.at].copy()
        self.buffer, self.at = joined[hi - self.at :], hi
        return taken

    @property
    def more(self) -> bool:
        return self.buffer.size > 0 or self.reader.peek() is not None


class ClipStream:
    """Clips ``start_clip, start_clip + 1, ...`` of a video in time order; the last one may be short.

    An iterator. Once exhausted it says how the file ended: ``end``, where the data ended (None when
    nothing could be decoded from ``start_clip`` on); ``truncated``, whether the file ended early (a
    decode error, or streams stopping more than :data:`END_SLACK_SECONDS` before the header's
    duration); ``error``, the decode error; ``next_index``, the index after the last clip given out
    (the clip count of a file whose header gives no duration)."""

    def __init__(self, path: str | os.PathLike[str], clip_seconds: float = DEFAULT_CLIP_SECONDS, fps: float = 1.0, *,
                 start_clip: int = 0, max_side: int = 1280, info: VideoInfo | None = None, decoder: str = "pyav"):
        if clip_seconds <= 0 or fps <= 0:
            raise ValueError("clip_seconds and fps must be positive")
        readers = {"pyav": _video_frames, "decord": _decord_frames}
        if decoder not in readers:
            raise ValueError(f"unknown decoder {decoder!r}; use one of {sorted(readers)}")
        self.info = info or probe(path)
        if decoder == "decord" and not self.info.duration_known:
            log.info("%s: no duration in the header, which decord needs; reading frames with PyAV", path)
            decoder = "pyav"
        self.path, self.clip_seconds, self.start_clip = str(path), clip_seconds, start_clip
        self.end: float | None = None
        self.truncated = False
        self.error: Exception | None = None
        self.next_index = start_clip
        self._clips = self._generate(readers[decoder], fps, max_side)

    def __iter__(self) -> ClipStream:
        return self

    def __next__(self) -> MediaClip:
        return next(self._clips)

    def close(self) -> None:
        self._clips.close()

    def _generate(self, read_frames, fps: float, max_side: int) -> Iterator[MediaClip]:
        info, path, seconds = self.info, self.path, self.clip_seconds
        first = self.start_clip * seconds
        frames = audio = None
        if info.has_video:
            frames = _Reader(read_frames(path, first, fps, max_side, info.rotation), lambda item: item[0])
        if info.has_audio:
            audio = _ClipAudio(_Reader(_audio_chunks(path, first), lambda item: (item[0] + len(item[1])) / SAMPLE_RATE))
        readers = [r for r in (frames, audio and audio.reader) if r is not None]
        n_clips = info.n_clips(seconds)  # None: read until the streams end
        index = self.start_clip
        try:
            while n_clips is None or index < n_clips:
                start = index * seconds
                end = min((index + 1) * seconds, info.duration) if n_clips is not None else (index + 1) * seconds
                clip = MediaClip(index, start, end)
                if frames is not None:
                    while (head := frames.peek()) is not None and head[0] < end - 1e-6:
                        t, image = frames.pop()
                        if t >= start - 1e-6:
                            clip.frames.append(image)
                            clip.frame_times.append(t)
                if audio is not None:
                    clip.audio = audio.take(round(start * SAMPLE_RATE), round(end * SAMPLE_RATE))
                more = (frames is not None and frames.peek() is not None) or (audio is not None and audio.more)
                error = next((r.error for r in readers if r.error is not None), None)
                if error is not None or not more:
                    self._ended(clip, error, [r.end for r in readers])
                last = self.truncated or (not more and n_clips is None)
                if clip.frames or clip.audio.size or not last:
                    yield clip
                    self.next_index = index + 1
                if last:
                    return
                index += 1
            self.end = max((r.end for r in readers if r.end is not None), default=None)
        finally:
            for reader in readers:
                reader.close()

    def _ended(self, clip: MediaClip, error: Exception | None, ends: list[float | None]) -> None:
        """The streams stopped (or failed) during ``clip``: note where, whether that is early, and
        end the clip where its data ends when the header's end is wrong or missing."""
        info = self.info
        self.error = error
        self.end = max((e for e in ends if e is not None), default=None)
        reached = self.end if self.end is not None else clip.start
        self.truncated = error is not None or (info.duration_known and reached < info.duration - END_SLACK_SECONDS)
        if self.truncated or not info.duration_known:
            clip.end = max(clip.start, min(clip.end, reached))
            clip.audio = clip.audio[: max(0, round(clip.end * SAMPLE_RATE) - round(clip.start * SAMPLE_RATE))]
        if self.truncated:
            clip.truncated = True
            if error is not None:
                log.warning("%s: decoding stopped at %.1f s: %s", self.path, reached, error)


def iter_clips(path: str | os.PathLike[str], clip_seconds: float = DEFAULT_CLIP_SECONDS, fps: float = 1.0, *,
               start_clip: int = 0, max_side: int = 1280, info: VideoInfo | None = None,
               decoder: str = "pyav") -> ClipStream:
    """Clips ``start_clip, start_clip + 1, ...`` in time order (a :class:`ClipStream`); the last one may
    be short. ``decoder`` picks the frame reader: ``pyav`` (default) or ``decord``; audio always uses PyAV."""
    return ClipStream(path, clip_seconds, fps, start_clip=start_clip, max_side=max_side, info=info, decoder=decoder)


def prefetch(clips: Iterator[MediaClip], depth: int = 1) -> Iterator[MediaClip]:
    """Decode the next clip in a background thread while the caller works on this one (PyAV
    releases the GIL while decoding). At most ``depth`` clips wait, so memory stays bounded."""
    import queue
    import threading

    done = object()
    slots: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for clip in clips:
                while not stop.is_set():
                    try:
                        slots.put(clip, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            slots.put(done)
        except BaseException as exc:  # hand decoding errors to the consumer
            slots.put(exc)

    worker = threading.Thread(target=produce, name="m3-decode", daemon=True)
    worker.start()
    try:
        while True:
            item = slots.get()
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
