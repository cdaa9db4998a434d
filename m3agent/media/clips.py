"""Stream a video as consecutive clips: frames sampled at ``fps`` and 16 kHz mono float32 audio.

Video and audio are decoded by two sequential readers over the same file, so memory holds one
clip at a time whatever the video's length. A decode error part-way (a truncated file) ends the
stream after the last good clip, which is marked ``truncated``.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from m3agent.media.probe import VideoInfo, probe

log = logging.getLogger(__name__)
SAMPLE_RATE = 16_000


@dataclass
class MediaClip:
    index: int
    start: float
    end: float
    frames: list[np.ndarray] = field(default_factory=list)  # RGB uint8 (H, W, 3)
    frame_times: list[float] = field(default_factory=list)  # seconds in the video
    audio: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))  # 16 kHz mono
    truncated: bool = False

    @property
    def duration(self) -> float:
        return self.end - self.start


def _video_frames(path: str, start: float, fps: float, max_side: int) -> Iterator[tuple[float, np.ndarray]]:
    """Frames at ``start + k / fps`` (nearest decoded frame at or after each target time)."""
    import av

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
            if t + 1e-6 < target:
                continue
            scale = min(1.0, max_side / max(frame.width, frame.height)) if max_side else 1.0
            if scale < 1.0:
                w = max(2, int(round(frame.width * scale / 2)) * 2)
                h = max(2, int(round(frame.height * scale / 2)) * 2)
                image = frame.to_ndarray(format="rgb24", width=w, height=h)
            else:
                image = frame.to_ndarray(format="rgb24")
            yield t, image
            target = (math.floor((t - start) / step + 1e-6) + 1) * step + start


def _decord_frames(path: str, start: float, fps: float, max_side: int) -> Iterator[tuple[float, np.ndarray]]:
    """The same frames through decord (``pip install decord``), which seeks by index instead of
    decoding every frame: faster on long videos with sparse sampling, and the GPU build decodes on
    the device."""
    import decord

    probe_reader = decord.VideoReader(path, ctx=decord.cpu(0))
    h, w = probe_reader[0].shape[:2]
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
            return
        t = float(reader.get_frame_timestamp(index)[0])
        yield t, reader[index].asnumpy()
        k += 1


def _audio_chunks(path: str, start: float) -> Iterator[tuple[float, np.ndarray]]:
    """(start time, 16 kHz mono float32 samples) chunks from ``start`` on."""
    import av

    with av.open(path) as container:
        if not container.streams.audio:
            return
        stream = container.streams.audio[0]
        if start > 0:
            container.seek(int(start * 1_000_000), any_frame=False, backward=True)
        resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
        position: float | None = None
        for frame in container.decode(stream):
            if position is None:
                position = float(frame.time) if frame.time is not None else start
            for out in resampler.resample(frame):
                samples = out.to_ndarray().reshape(-1).astype(np.float32, copy=False)
                yield position, samples
                position += len(samples) / SAMPLE_RATE
        for out in resampler.resample(None):
            samples = out.to_ndarray().reshape(-1).astype(np.float32, copy=False)
            yield (position or start), samples


class _Peekable:
    def __init__(self, it):
        self._it, self._head, self.error = it, None, None

    def peek(self):
        if self._head is None:
            try:
                self._head = next(self._it)
            except StopIteration:
                return None
            except Exception as exc:  # decode error mid-file: stop this stream, keep what we have
                self.error = exc
                return None
        return self._head

    def pop(self):
        head = self.peek()
        self._head = None
        return head


def iter_clips(path: str | os.PathLike[str], clip_seconds: float = 30.0, fps: float = 1.0, *,
               start_clip: int = 0, max_side: int = 1280, info: VideoInfo | None = None,
               decoder: str = "pyav") -> Iterator[MediaClip]:
    """Yield clips ``start_clip, start_clip + 1, ...`` in time order; the last one may be short.
    ``decoder`` picks the frame reader: ``pyav`` (default) or ``decord``; audio always uses PyAV."""
    if clip_seconds <= 0 or fps <= 0:
        raise ValueError("clip_seconds and fps must be positive")
    readers = {"pyav": _video_frames, "decord": _decord_frames}
    if decoder not in readers:
        raise ValueError(f"unknown decoder {decoder!r}; use one of {sorted(readers)}")
    info = info or probe(path)
    path = str(path)
    n_clips = info.n_clips(clip_seconds)
    start0 = start_clip * clip_seconds
    frames = _Peekable(readers[decoder](path, start0, fps, max_side)) if info.has_video else None
    audio = _Peekable(_audio_chunks(path, start0)) if info.has_audio else None
    buffer, buffer_t = np.zeros(0, np.float32), None  # audio not yet given out, and its start time
    for index in range(start_clip, n_clips):
        start = index * clip_seconds
        end = min((index + 1) * clip_seconds, info.duration) if info.duration else (index + 1) * clip_seconds
        clip = MediaClip(index, start, end)
        if frames is not None:
            while (head := frames.peek()) is not None and head[0] < end - 1e-6:
                t, image = frames.pop()
                if t >= start - 1e-6:
                    clip.frames.append(image)
                    clip.frame_times.append(t)
        if audio is not None:
            parts = [buffer]
            have_until = (buffer_t or start) + len(buffer) / SAMPLE_RATE
            while have_until < end - 1e-6 and (head := audio.peek()) is not None:
                t, samples = audio.pop()
                if buffer_t is None:
                    buffer_t, have_until = t, t
                parts.append(samples)
                have_until += len(samples) / SAMPLE_RATE
            joined = np.concatenate(parts)
            offset = int(round((start - (buffer_t if buffer_t is not None else start)) * SAMPLE_RATE))
            if offset < 0:  # audio starts late: silence before it
                joined = np.concatenate([np.zeros(-offset, np.float32), joined])
                offset = 0
            need = int(round((end - start) * SAMPLE_RATE))
            clip.audio = joined[offset : offset + need].copy()
            buffer, buffer_t = joined[offset + need :], end
        failed = (frames is not None and frames.error) or (audio is not None and audio.error)
        if failed:
            clip.truncated = True
            log.warning("%s: decoding stopped at %.1f s: %s", path, end, failed)
        if clip.frames or clip.audio.size or not failed:
            yield clip
        if failed:
            return


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
