"""What a media file holds, checked before the clips are decoded, with errors a user can act on.

Sizes are as a player shows the video (after its display rotation); a duration of 0 means the header
gives none, and the clips are then read until the streams end."""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from m3agent.errors import M3AgentError

log = logging.getLogger(__name__)


def _decodable(stream) -> bool:
    context = getattr(stream, "codec_context", None)
    return context is not None and bool(getattr(context, "name", None))


class MediaError(M3AgentError, ValueError):
    """The file cannot be read as a video (missing, empty, corrupt, or no decodable stream)."""


@dataclass(frozen=True)
class VideoInfo:
    path: str
    duration: float  # 0.0 when the header gives none (a streamed WebM): read until the streams end
    width: int  # as displayed, after ``rotation``
    height: int
    fps: float
    has_video: bool
    has_audio: bool
    video_codec: str | None
    audio_codec: str | None
    rotation: int = 0  # display matrix angle, counter-clockwise degrees (0, 90, 180 or 270) to show frames upright

    @property
    def duration_known(self) -> bool:
        return self.duration > 0

    def n_clips(self, clip_seconds: float) -> int | None:
        """Clips the header's duration makes, or None when the header gives no duration."""
        import math

        return max(1, math.ceil(self.duration / clip_seconds - 1e-6)) if self.duration_known else None


def _rotation(container, stream) -> int:
    """The display rotation of ``stream``, read from its first frame (PyAV exposes the display matrix
    on frames only), rounded to a quarter turn; the legacy ``rotate`` tag (clockwise) when there is none."""
    import av

    angle = 0.0
    try:
        for frame in container.decode(stream):
            angle = float(frame.rotation or 0)
            break
    except (av.error.FFmpegError, ValueError) as exc:  # an undecodable first frame is iter_clips' business
        log.debug("%s: no first frame to read the rotation from (%s)", container.name, exc)
    if not angle and (tag := stream.metadata.get("rotate")):
        with contextlib.suppress(ValueError):
            angle = -float(tag)
    quarter = round(angle / 90)
    if abs(angle - 90 * quarter) > 1:
        log.warning("%s: display rotation of %.1f degrees is not a quarter turn; frames are left as stored",
                    container.name, angle)
        return 0
    return 90 * quarter % 360


def probe(path: str | os.PathLike[str]) -> VideoInfo:
    import av

    p = Path(path)
    if not p.exists():
        raise MediaError(f"video not found: {p}")
    if p.is_dir():
        raise MediaError(f"{p} is a directory, not a video")
    if p.stat().st_size == 0:
        raise MediaError(f"{p} is empty (0 bytes)")
    try:
        container = av.open(str(p))
    except (av.error.FFmpegError, UnicodeDecodeError) as exc:
        raise MediaError(f"{p} is not a readable video: {exc}") from exc
    with container:
        vs = next((s for s in container.streams.video if _decodable(s)), None)
        as_ = next((s for s in container.streams.audio if _decodable(s)), None)
        if vs is None and as_ is None:
            tags = [getattr(s, "codec_tag", "?") for s in container.streams]
            what = f"no stream it can decode (codecs {tags})" if tags else "no video or audio stream"
            raise MediaError(f"{p} has {what}: unsupported codec or not a video")
        if vs is None and container.streams.video:
            log.warning("%s: the video stream's codec cannot be decoded here; using the audio only", p)
        duration = 0.0
        if container.duration:
            duration = container.duration / 1_000_000
        for s in (vs, as_):
            if s is not None and s.duration and s.time_base:
                duration = max(duration, float(s.duration * s.time_base))
        fps = float(vs.average_rate) if vs is not None and vs.average_rate else 0.0
        width, height = (int(vs.codec_context.width), int(vs.codec_context.height)) if vs is not None else (0, 0)
        rotation = _rotation(container, vs) if vs is not None else 0
        if rotation in (90, 270):
            width, height = height, width
        return VideoInfo(
            path=str(p),
            duration=duration,
            width=width,
            height=height,
            fps=fps,
            has_video=vs is not None,
            has_audio=as_ is not None,
            video_codec=vs.codec_context.name if vs is not None else None,
            audio_codec=as_.codec_context.name if as_ is not None else None,
            rotation=rotation,
        )
