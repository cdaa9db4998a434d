"""Build test and demo episodes: real face photos on screen while espeak-ng voices speak a script (or a
recording of real speech plays).

Every scene shows one photo (or a plain background for an off-screen voice) for as long as its
line lasts plus a pause; the result is an H.264/AAC MP4 with a known ground truth: who is visible
when, who says what, and in which clip.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import wave
from dataclasses import asdict, dataclass
from pathlib import Path

from m3agent.errors import M3AgentError


class ToolMissingError(M3AgentError, RuntimeError):
    pass


@dataclass(frozen=True)
class Scene:
    person: str | None  # who speaks (None: nobody speaks)
    image: str | None  # photo on screen (None: a plain background, nobody visible)
    voice: str | None  # espeak-ng voice, e.g. "en-us+m3"
    text: str = ""
    min_seconds: float = 4.0
    pause: float = 1.0
    audio: str | None = None  # a recording (any format ffmpeg reads) played instead of espeak speaking


@dataclass(frozen=True)
class SceneTiming:
    person: str | None
    image: str | None
    text: str
    start: float
    end: float
    speech_start: float
    speech_end: float


def _need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise ToolMissingError(f"{tool} is not installed (apt-get install {tool})")
    return path


def _wav_seconds(path: Path) -> float:
    with wave.open(str(path)) as w:
        return w.getnframes() / float(w.getframerate())


def speak(text: str, voice: str, wav: str | Path, espeak: str = "") -> float:
    """``text`` said by espeak-ng's ``voice`` (at the episodes' 150 words a minute) into ``wav``; its seconds."""
    subprocess.run([espeak or _need("espeak-ng"), "-v", voice, "-s", "150", "-w", str(wav), text],
                   check=True, capture_output=True)
    return _wav_seconds(Path(wav))


def build_episode(scenes: list[Scene], out_path: str | Path, *, width: int = 1280, height: int = 720,
                  fps: int = 25, speech_offset: float = 0.5) -> list[SceneTiming]:
    """Render ``scenes`` into ``out_path``; returns each scene's timing (and writes it as JSON beside)."""
    ffmpeg = _need("ffmpeg")
    espeak = _need("espeak-ng") if any(s.text and s.voice and not s.audio for s in scenes) else ""
    out_path = Path(out_path)
    timings: list[SceneTiming] = []
    with tempfile.TemporaryDirectory(prefix="m3synth-") as tmp:
        tmpdir = Path(tmp)
        parts = []
        t = 0.0
        for i, scene in enumerate(scenes):
            speech = 0.0
            wav = tmpdir / f"s{i}.wav"
            if scene.audio:
                subprocess.run([ffmpeg, "-y", "-loglevel", "error", "-i", scene.audio, "-ac", "1", str(wav)],
                               check=True, capture_output=True)
                speech = _wav_seconds(wav)
            elif scene.text and scene.voice:
                speech = speak(scene.text, scene.voice, wav, espeak)
            duration = max(scene.min_seconds, speech_offset + speech + scene.pause)
            part = tmpdir / f"s{i}.mp4"
            vf = (f"scale={width}:{height}:force_original_aspect_ratio=decrease,"
                  f"pad={width}:{height}:(ow-iw)/2:(oh-ih)/2:color=0x202830,format=yuv420p")
            cmd = [ffmpeg, "-y", "-loglevel", "error"]
            if scene.image:
                cmd += ["-loop", "1", "-framerate", str(fps), "-i", scene.image]
            else:
                cmd += ["-f", "lavfi", "-i", f"color=c=0x405060:s={width}x{height}:r={fps}"]
            if speech:
                delay = int(speech_offset * 1000)
                cmd += ["-i", str(wav), "-filter_complex",
                        f"[1:a]adelay={delay}|{delay},apad,aresample=44100,aformat=channel_layouts=mono[a]",
                        "-map", "0:v", "-map", "[a]"]
            else:
                cmd += ["-f", "lavfi", "-i", "anullsrc=r=44100:cl=mono", "-map", "0:v", "-map", "1:a"]
            cmd += ["-vf", vf, "-t", f"{duration:.3f}", "-r", str(fps), "-c:v", "libx264", "-preset", "veryfast",
                    "-crf", "28", "-c:a", "aac", "-b:a", "64k", "-ar", "44100", "-ac", "1", str(part)]
            subprocess.run(cmd, check=True, capture_output=True)
            parts.append(part)
            s0 = t + (speech_offset if speech else 0.0)
            timings.append(SceneTiming(scene.person, scene.image, scene.text, t, t + duration, s0, s0 + speech))
            t += duration
        listing = tmpdir / "parts.txt"
        listing.write_text("".join(f"file '{p}'\n" for p in parts))
        out_path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([ffmpeg, "-y", "-loglevel", "error", "-f", "concat", "-safe", "0", "-i", str(listing),
                        "-c", "copy", "-movflags", "+faststart", str(out_path)], check=True, capture_output=True)
    out_path.with_suffix(".json").write_text(json.dumps([asdict(s) for s in timings], indent=1))
    return timings


def read_timings(video_path: str | Path) -> list[SceneTiming]:
    """The scene timings :func:`build_episode` wrote beside the video."""
    data = json.loads(Path(video_path).with_suffix(".json").read_text())
    return [SceneTiming(**item) for item in data]


def who_at(timings: list[SceneTiming], t: float, speech: bool = False, window: float = 0.5) -> str | None:
    """Ground truth: the person whose scene (or speech) overlaps ``[t - window, t + window]`` most."""

    def overlap(s: SceneTiming) -> float:
        lo, hi = (s.speech_start, s.speech_end) if speech else (s.start, s.end)
        return min(hi, t + window) - max(lo, t - window)

    best = max(timings, key=overlap)
    return best.person if overlap(best) > 0 else None
