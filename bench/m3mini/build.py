"""Build the mini M3-Bench: its videos (photos on screen, espeak-ng voices), its annotations in M3-Bench's
exact schema (``m3mini.json``) and where each answer's evidence is (``m3mini.evidence.json``).

Usage (from the repository root)::

    python -m bench.m3mini.build --out bench/.cache/m3mini/videos   # render the videos (skips finished ones)
    python -m bench.m3mini.build --write                            # regenerate the two JSON files
    python -m bench.m3mini.build --check                            # fail if they differ from the scripts
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

from bench.m3mini.scripts import SCENE_SECONDS, VIDEOS, Video  # noqa: E402

HERE = Path(__file__).resolve().parent
FACES = ROOT / "tests" / "data" / "faces"
ANNOTATIONS, EVIDENCE = HERE / "m3mini.json", HERE / "m3mini.evidence.json"
CLIP_SECONDS = 30.0


def clock(seconds: float) -> str:
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes:02d}:{rest:02d}"


def length(video: Video) -> float:
    return SCENE_SECONDS * len(video.scenes)


def clip_of(scene: int) -> int:
    return int(scene * SCENE_SECONDS // CLIP_SECONDS)


def annotations() -> dict:
    """The M3-Bench annotation file of the mini benchmark (robot variant: every question has a timestamp)."""
    out = {}
    for video in VIDEOS:
        qa_list = []
        for number, ask in enumerate(video.asks, 1):
            at = length(video) if ask.at is None else ask.at
            lines = "; ".join(f"scene {s} at {clock(s * SCENE_SECONDS)}: {said_and_shown(video, s)}" for s in ask.scenes)
            qa_list.append({"question": ask.question, "answer": ask.answer, "question_id": f"{video.id}_Q{number:02d}",
                            "reasoning": f"The answer follows from {lines}.", "timestamp": clock(at),
                            "type": list(ask.types), "before_clip": int(at // CLIP_SECONDS) - 1})
        out[video.id] = {"video_path": f"videos/{video.id}.mp4", "mem_path": f"memories/{video.id}.pkl",
                         "qa_list": qa_list}
    return out


def said_and_shown(video: Video, scene: int) -> str:
    """What a scene says aloud and shows in writing, for an annotation's reasoning."""
    parts = [f'"{video.scenes[scene][2]}"'] if video.scenes[scene][2] else []
    parts += [f'the {where} "{" / ".join(text.splitlines())}"' for s, text, where in video.shown if s == scene]
    return " and ".join(parts)


def evidence() -> dict[str, list[int]]:
    return {f"{video.id}_Q{number:02d}": sorted({clip_of(s) for s in ask.scenes})
            for video in VIDEOS for number, ask in enumerate(video.asks, 1)}


def scenes(video: Video, pictures: Path | None = None) -> list:
    """The video's scenes; a scene with writing shows a picture made in ``pictures`` (its photo with the writing
    drawn on, or a white page)."""
    from m3agent.samples.screen_text import Writing, with_writing
    from m3agent.samples.synth import Scene

    out = []
    for index, (person, photo, line) in enumerate(video.scenes):
        writings = tuple(Writing(text, where) for s, text, where in video.shown if s == index)
        base = str(FACES / video.people[person].photos[photo % len(video.people[person].photos)]) if person else None
        base = with_writing(base, writings, pictures, f"scene{index}.png")
        if person is None:
            out.append(Scene(None, base, None, "", min_seconds=SCENE_SECONDS))
        else:
            who = video.people[person]
            out.append(Scene(person, base, who.voice, line, min_seconds=SCENE_SECONDS))
    return out


class TimingError(RuntimeError):
    """A scene did not last exactly SCENE_SECONDS: the annotations' timestamps would not hold."""


def build_video(video: Video, out_dir: Path) -> Path:
    """Render one video (once: a finished file with its timings beside it is kept) and check its timings."""
    from m3agent.samples.synth import build_episode, read_timings

    path = Path(out_dir) / f"{video.id}.mp4"
    if path.exists() and path.with_suffix(".json").exists():
        timings = read_timings(path)
    else:
        timings = build_episode(scenes(video, Path(out_dir) / "pictures" / video.id), path)
    for index, timing in enumerate(timings):
        if abs(timing.start - index * SCENE_SECONDS) > 1e-6 or abs(timing.end - timing.start - SCENE_SECONDS) > 1e-6:
            raise TimingError(f"{path}: scene {index} spans {timing.start:.2f}-{timing.end:.2f} s, not "
                              f"{index * SCENE_SECONDS:.0f}-{(index + 1) * SCENE_SECONDS:.0f} s; shorten its line")
    return path


def build(out_dir: Path) -> list[Path]:
    return [build_video(video, out_dir) for video in VIDEOS]


def _dump(data) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description="Build the mini M3-Bench.")
    parser.add_argument("--out", type=Path, help="render the videos into this folder")
    parser.add_argument("--write", action="store_true", help="regenerate m3mini.json and m3mini.evidence.json")
    parser.add_argument("--check", action="store_true", help="fail if the JSON files differ from the scripts")
    args = parser.parse_args()
    if args.write:
        ANNOTATIONS.write_text(_dump(annotations()))
        EVIDENCE.write_text(_dump(evidence()))
    if args.check and (ANNOTATIONS.read_text() != _dump(annotations()) or EVIDENCE.read_text() != _dump(evidence())):
        raise SystemExit("m3mini.json or m3mini.evidence.json differs from scripts.py: run with --write")
    if args.out:
        for path in build(args.out):
            print(path)


if __name__ == "__main__":
    main()
