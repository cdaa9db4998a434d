"""Damaged and odd media files built from clean ones, for the tests and ``bench/hostile.py``.

Each builder takes a source (a video, or an image for :func:`rotated`) and an output path, writes
the output with the ffmpeg CLI (PyAV where the CLI cannot say it) and returns the output path.
They reproduce what real files do to a reader: a join whose audio has holes or overlaps, a
browser recording streamed without a duration, a phone video stored sideways with a rotation in
its display matrix, a download cut short. Keep sources small: every builder re-encodes or copies
the whole source.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from m3agent.samples.synth import _need

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".webp"}


def _ffmpeg(*args: str) -> None:
    subprocess.run([_need("ffmpeg"), "-y", "-hide_banner", "-loglevel", "error", *args], check=True,
                   capture_output=True)


def _duration(path: Path) -> float:
    import av

    with av.open(str(path)) as container:
        return container.duration / 1_000_000 if container.duration else 0.0


def marker_video(out: str | Path, *, seconds: float = 60.0, marks: tuple[float, ...] = (55.0,), fps: int = 10,
                 size: tuple[int, int] = (64, 48), mark_seconds: float = 0.3) -> Path:
    """A tiny dark H.264/AAC video with a faint hum where, at each time in ``marks``, the picture
    turns white and a loud 1 kHz tone sounds for ``mark_seconds``: how far the tone lands from the
    flash says whether a reader keeps the audio on the video's timeline."""
    out = Path(out)
    on = "+".join(f"between(t,{m},{m + mark_seconds})" for m in marks) or "0"
    video = (f"color=c=black:s={size[0]}x{size[1]}:r={fps}:d={seconds},"
             f"drawbox=x=0:y=0:w=iw:h=ih:color=white:t=fill:enable='{on}'")
    audio = f"aevalsrc='0.01*sin(2*PI*300*t)+0.5*sin(2*PI*1000*t)*({on})':s=44100:d={seconds}"
    _ffmpeg("-f", "lavfi", "-i", video, "-f", "lavfi", "-i", audio, "-c:v", "libx264", "-preset", "ultrafast",
            "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", str(out))
    return out


def joined_with_audio_gaps(source: str | Path, out: str | Path, *, segment_seconds: float = 10.0,
                           audio_gap: float = 1.0) -> Path:
    """``source`` cut into ``segment_seconds`` segments and joined again with ffmpeg's concat demuxer
    (``-c copy``), as recordings are joined. Each segment's audio is ``audio_gap`` s shorter than its
    video, so the joined audio timeline has a hole before every join; a negative gap makes each
    segment's audio run on past its video instead, so audio timestamps overlap at every join (ffmpeg
    squeezes them together, as in real joined files). Every sound stays at its source time, so a
    reader that places audio by its timestamps hears it next to its picture."""
    source, out = Path(source), Path(out)
    n = int(_duration(source) // segment_seconds)
    if n < 2:
        raise ValueError(f"{source} is shorter than two {segment_seconds} s segments")
    audio_seconds = segment_seconds - audio_gap
    with tempfile.TemporaryDirectory(prefix="m3-join-") as tmp:
        listing = Path(tmp) / "list.txt"
        lines = []
        for i in range(n):
            part = Path(tmp) / f"part{i}.mp4"
            graph = (f"[0:v]trim=end={segment_seconds},setpts=PTS-STARTPTS[v];"
                     f"[0:a]atrim=end={audio_seconds},asetpts=PTS-STARTPTS[a]")
            _ffmpeg("-ss", f"{i * segment_seconds}", "-t", f"{max(segment_seconds, audio_seconds)}",
                    "-i", str(source), "-filter_complex", graph, "-map", "[v]", "-map", "[a]",
                    "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", str(part))
            # the next segment starts where this one's video ends, whatever its audio does
            lines += [f"file '{part.name}'", f"duration {segment_seconds}"]
        listing.write_text("\n".join(lines) + "\n")
        _ffmpeg("-f", "concat", "-safe", "0", "-i", str(listing), "-c", "copy", str(out))
    return out


def streamed_webm(source: str | Path, out: str | Path) -> Path:
    """``source`` as VP8/Opus WebM written through a pipe, as a browser's MediaRecorder streams it:
    the muxer cannot seek back, so the header has no duration (ffprobe: ``Duration: N/A``) and no
    cues."""
    out = Path(out)
    with open(out, "wb") as sink:
        subprocess.run([_need("ffmpeg"), "-hide_banner", "-loglevel", "error", "-i", str(source),
                        "-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "300k",
                        "-c:a", "libopus", "-f", "webm", "pipe:1"], stdout=sink, stderr=subprocess.PIPE,
                       check=True)
    return out


def rotated(source: str | Path, out: str | Path, *, rotation: int = -90, seconds: float = 2.0, fps: int = 5,
            width: int = 320) -> Path:
    """An MP4 of ``source`` (an image, shown for ``seconds``, or a video) stored turned, with a display
    matrix that turns it back: a player shows it upright, a reader that ignores the matrix sees it
    sideways. ``rotation`` is the matrix's angle as ffprobe prints it (counter-clockwise degrees, a
    multiple of 90): -90, the default, is a portrait phone video, which players turn 90 degrees
    clockwise."""
    import av

    source, out = Path(source), Path(out)
    if rotation % 90:
        raise ValueError(f"rotation must be a multiple of 90 degrees, not {rotation}")
    turn = {0: "null", 1: "transpose=cclock", 2: "hflip,vflip", 3: "transpose=clock"}[(-rotation // 90) % 4]
    vf = f"scale={width}:-2,{turn}"
    with tempfile.TemporaryDirectory(prefix="m3-rot-") as tmp:
        stored = Path(tmp) / "stored.mp4"
        if source.suffix.lower() in IMAGE_SUFFIXES:
            _ffmpeg("-loop", "1", "-t", f"{seconds}", "-i", str(source), "-r", str(fps), "-vf", vf,
                    "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", str(stored))
        else:
            _ffmpeg("-i", str(source), "-vf", vf, "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
                    "-c:a", "aac", str(stored))
        # ffmpeg before 6.0 has no -display_rotation, and its `rotate` tag's sign changed over versions:
        # write the matrix with PyAV while copying the packets
        with av.open(str(stored)) as src, av.open(str(out), "w") as dst:
            streams = {s.index: dst.add_stream_from_template(s) for s in src.streams if s.type in ("video", "audio")}
            for s in src.streams.video[:1]:
                streams[s.index].set_display_rotation(rotation)
            for packet in src.demux(*[src.streams[i] for i in streams]):
                if packet.dts is None:  # the demuxer's flush packets
                    continue
                packet.stream = streams[packet.stream.index]
                dst.mux(packet)
    return out


def truncated(source: str | Path, out: str | Path, fraction: float = 0.4, *, at_seconds: float | None = None) -> Path:
    """The first ``fraction`` of ``source``'s bytes, as an interrupted download or copy leaves it: the
    cut usually falls inside a packet, which fails to decode. With ``at_seconds`` the cut falls just
    before the first packet at or after that time instead, so the streams simply stop there. (An MP4
    keeps its index at the front only when written with ``-movflags +faststart``; cut without it, the
    index is gone and the file does not open at all.)"""
    import av

    source, out = Path(source), Path(out)
    data = source.read_bytes()
    cut = int(len(data) * fraction)
    if at_seconds is not None:
        with av.open(str(source)) as container:
            cut = next((p.pos for p in container.demux() if p.pos is not None and p.pos >= 0 and p.pts is not None
                        and float(p.pts * p.time_base) >= at_seconds), len(data))
    out.write_bytes(data[:cut])
    return out
