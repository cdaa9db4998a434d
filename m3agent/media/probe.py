"""What a media file holds, checked before any decoding, with errors a user can act on."""

from __future__ import annotations

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
    duration: float
    width: int
    height: int
    fps: float
    has_video: bool
    has_audio: bool
    video_codec: str | None
    audio_codec: str | None

    def n_clips(self, clip_seconds: float) -> int:
        import math

        return max(1, math.ceil(self.duration / clip_seconds - 1e-6)) if self.duration > 0 else 0


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
        return VideoInfo(
            path=str(p),
            duration=duration,
            width=int(vs.codec_context.width) if vs is not None else 0,
            height=int(vs.codec_context.height) if vs is not None else 0,
            fps=fps,
            has_video=vs is not None,
            has_audio=as_ is not None,
            video_codec=vs.codec_context.name if vs is not None else None,
            audio_codec=as_.codec_context.name if as_ is not None else None,
        )
