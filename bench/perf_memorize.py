"""Memorization speed per stage and identity purity with the embedded CPU stack.

Usage: ``python -m bench.perf_memorize [--minutes 5] [--write docs/BENCHMARKS.md]``. Renders a
720p episode of the fixture people (tests/episode.py script, repeated to the requested length),
memorizes it at 1 fps, and reports the real-time factor overall and per stage, plus identity
purity: the share of face/voice nodes whose every sighting belongs to one person, and whether each
person got exactly one face node and one voice node. On-screen text reading is measured in the same run: the
episode memorized with the reader and without it (runs interleaved), the reader's milliseconds per key frame and
reads per clip, and two videos full of writing (the on-screen text fixture, and a slide deck turning a page
every 2 s, which the per-clip caps bound).
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from dataclasses import replace
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def purity(export: dict, timings) -> dict:
    from m3agent.samples.synth import who_at

    face_people, voice_people = {}, {}
    for node in export["nodes"]:
        if node["kind"] == "episodic" and "on screen" in (node["text"] or ""):
            times = [int(m) * 60 + int(s) for m, s in re.findall(r"(\d\d):(\d\d)", node["text"])]
            for face in node["entities"]:
                face_people.setdefault(face, set()).add(who_at(timings, sum(times) / len(times), window=0.3))
        if node["kind"] == "voice":
            voice_people[node["id"]] = {who_at(timings, (s["start"] + s["end"]) / 2, speech=True)
                                        for s in node.get("segments", [])}
    people = {s.person for s in timings if s.person}

    def one_node_each(mapping):
        owners = {}
        for node, who in mapping.items():
            if len(who) == 1:
                owners.setdefault(next(iter(who)), []).append(node)
        return all(len(owners.get(p, [])) == 1 for p in people)

    pure = [len(v) == 1 for v in list(face_people.values()) + list(voice_people.values())]
    return {"face_nodes": len(face_people), "voice_nodes": len(voice_people), "people": len(people),
            "purity": sum(pure) / max(len(pure), 1), "one_face_node_each": one_node_each(face_people),
            "one_voice_node_each": one_node_each(voice_people), "characters": len(export["characters"])}


class TimedReader:
    """Wraps a text backend and times each read, apart for whole frames and for regions of one (the videos here
    are 720p: a read of a full-height image is a key frame)."""

    def __init__(self, inner):
        self.inner, self.name = inner, inner.name
        self.frames: list[float] = []
        self.regions: list[float] = []

    def read(self, image):
        t = time.perf_counter()
        out = self.inner.read(image)
        (self.frames if image.shape[0] >= 700 else self.regions).append(time.perf_counter() - t)
        return out


def median(values: list[float]) -> float:
    values = sorted(values)
    return values[len(values) // 2] if values else 0.0


def slide_deck(path: Path, seconds: int = 60, page_seconds: float = 2.0) -> Path:
    """A video that is all text: a page of a document every ``page_seconds``, nobody on screen, no speech."""
    from m3agent.samples.screen_text import Writing, picture
    from m3agent.samples.synth import Scene, build_episode

    scenes = []
    for k in range(int(seconds / page_seconds)):
        body = "\n".join(f"Clause {k}.{j}: the tenant pays {k * 7 + j} euros on day {j + 1}" for j in range(5))
        image = picture(path.parent / "deck" / f"page{k}.png", None, (Writing(f"Page {k + 1}\n{body}", "slide"),))
        scenes.append(Scene(None, str(image), None, "", min_seconds=page_seconds, pause=0.0))
    build_episode(scenes, path)
    return path


def text_runs(tmp: Path, config, perceiver, memorizer, embedder) -> dict:
    """The two videos full of writing, memorized with the reader timed."""
    from m3agent import factory
    from m3agent.memorize import memorize_video
    from m3agent.samples.screen_text import build_text_episode

    out = {}
    build_text_episode(tmp / "text.mp4")
    videos = {"text fixture": tmp / "text.mp4", "slide deck": slide_deck(tmp / "deck.mp4")}
    for label, path in videos.items():
        reader = TimedReader(perceiver.text.inner if isinstance(perceiver.text, TimedReader) else perceiver.text)
        perceiver.text = reader
        graph = factory.open_memory(tmp / f"{label.replace(' ', '_')}.db", config, embedder=embedder, create=True)
        report = memorize_video(path, graph, perceiver, memorizer, config.memorize, progress=False)
        lines = sum(n.text.startswith("The text") for n in graph.live_lines(report.video_id).values())
        graph.close()
        clips = max(1, report.clips_done)
        out[label] = {"realtime_factor": report.realtime_factor, "seconds": report.seconds,
                      "video_seconds": report.media_seconds, "frames_per_clip": len(reader.frames) / clips,
                      "regions_per_clip": len(reader.regions) / clips, "frame_ms": 1000 * median(reader.frames),
                      "text_lines": lines}
    return out


def run(minutes: float, repeat: int = 3) -> dict:
    from m3agent import factory
    from m3agent.config import load_config
    from m3agent.memorize import memorize_video
    from m3agent.perception.pipeline import Perceiver
    from m3agent.samples.episode import scenes
    from m3agent.samples.synth import build_episode

    tmp = Path(tempfile.mkdtemp(prefix="m3mem-"))
    base = scenes()
    reps = max(1, round(minutes * 60 / (13.0 * len(base))))
    t = time.perf_counter()
    timings = build_episode(base * reps, tmp / "episode.mp4")
    render_s = time.perf_counter() - t
    config = load_config()
    t = time.perf_counter()
    perceiver, memorizer, embedder = factory.memorization_stack(config)
    load_s = time.perf_counter() - t
    pc = config.memorize.perception
    reader = TimedReader(perceiver.text) if perceiver.text is not None else None
    perceiver.text = reader
    blind = Perceiver(perceiver.faces, perceiver.voices, perceiver.asr, pc, text=None)
    runs, without = [], []
    for k in range(repeat):  # a fresh DB each time, with and without the text reader in turn; the median is reported
        graph = factory.open_memory(tmp / f"m{k}.db", config, embedder=embedder, create=True)
        report = memorize_video(tmp / "episode.mp4", graph, perceiver, memorizer, config.memorize)
        runs.append((report.seconds, report, purity(graph.export(), timings)))
        graph.close()
        graph = factory.open_memory(tmp / f"blind{k}.db", config, embedder=embedder, create=True)
        without.append(memorize_video(tmp / "episode.mp4", graph, blind, memorizer, config.memorize).seconds)
        graph.close()
    runs.sort(key=lambda r: r[0])
    _, report, pure = runs[len(runs) // 2]
    clips = max(1, report.clips_done) * repeat
    text = {"backend": getattr(reader, "name", ""), "without_seconds": sorted(without),
            "without_realtime_factor": report.media_seconds / median(without) if without else 0.0,
            "frame_ms": 1000 * median(reader.frames) if reader else 0.0,
            "frames_per_clip": len(reader.frames) / clips if reader else 0.0,
            "regions_per_clip": len(reader.regions) / clips if reader else 0.0}
    if reader is not None:
        text["writing"] = text_runs(tmp, config, perceiver, memorizer, embedder)
    # once more with every frame searched whole: what footage that changes everywhere every second costs
    whole = Perceiver(perceiver.faces, perceiver.voices, perceiver.asr, replace(pc, face_search_changes=False),
                      text=perceiver.text)
    graph = factory.open_memory(tmp / "whole.db", config, embedder=embedder, create=True)
    whole_report = memorize_video(tmp / "episode.mp4", graph, whole, memorizer, config.memorize)
    graph.close()
    return {"face_backend": pc.face_backend, "voice_backend": pc.voice_backend, "max_side": pc.max_side,
            "asr_beam_size": pc.asr_beam_size, "video_seconds": report.duration, "render_s": render_s,
            "model_load_s": load_s, "repeat": repeat,
            "all_seconds": [round(r[0], 2) for r in runs], **report.to_dict(), **pure,
            "whole_frames": {"realtime_factor": whole_report.realtime_factor, "seconds": whole_report.seconds,
                             "faces_s": whole_report.stage_seconds.get("faces", 0.0)}, "text": text}


FACE_STACKS = {"retinaface": "RetinaFace (full frame) + dlib ResNet faces", "dlib": "dlib HOG (960 px) + ResNet faces"}


def previous_figure(path: Path) -> str:
    """The real-time factor, date and stack of the section this run replaces, as one sentence ("" if none)."""
    text = path.read_text() if path.exists() else ""
    start = text.find("## Memorization: real-time factor")
    if start == -1:
        return ""
    end = text.find("\n## ", start + 1)
    old = text[start:end if end != -1 else None]
    factor, when = re.search(r"\*\*([\d.]+)x real time", old), re.search(r"Date: ([\d-]+)", old)
    stack = re.search(r"embedded stack: (.+?) faces", old, re.S)
    if not factor or not when:
        return ""
    faces = f", {' '.join(stack.group(1).split())} faces" if stack else ""
    return f"Previous figure in this file: {factor.group(1)}x real time ({when.group(1)}{faces})."


def render(r: dict, previous: str = "") -> str:
    import platform

    from bench.perf_memory import machine

    minutes = r["video_seconds"] / 60
    faces = FACE_STACKS.get(r.get("face_backend", ""), f"{r.get('face_backend')} faces")
    stages = r["stage_seconds"]
    rows = "\n".join(f"| {k} | {v:.1f} s | {v / minutes:.2f} s |" for k, v in stages.items())
    return f"""## Memorization: real-time factor and identity purity (`bench/perf_memorize.py`)

Machine: {machine()}. Date: {date.today().isoformat()}. Command: `python -m bench.perf_memorize --write docs/BENCHMARKS.md`.
Python {platform.python_version()}; embedded stack: {faces}, {r.get('voice_backend', 'campp')} voices, Silero VAD + Whisper
tiny.en (int8, {r.get('asr_beam_size', 1)} beam(s), two threads, two clips' speech in one window where it fits), MiniLM text embeddings; 1 fps, 30-s clips, frames decoded at most {r.get('max_side', 960)} px.

Video: {minutes:.1f} min of 1280x720 H.264 rendered from the fixture script ({r['people']} people, real photos,
espeak-ng voices). Models load once in {r['model_load_s']:.1f} s (not counted below).

**{r['realtime_factor']:.1f}x real time**, median of {r['repeat']} runs ({r['seconds']:.1f} s for
{r['video_seconds']:.0f} s of video; all runs: {', '.join(f'{x:.1f} s' for x in r['all_seconds'])}; i.e.
{60 / max(r['realtime_factor'], 1e-9):.1f} min per hour of video). {previous} Stage times add up to more than the total because
they overlap: the next clips decode in a thread ("decode (wait)" is only the time spent waiting for them), faces and
speech have workers of their own, a face worker done with this clip goes on to the next clip's faces (two clips' faces
may be under way at once), and speech is recognised two clips at a time, the next pair queued as soon as both its
clips are decoded (a clip's "asr" is its share of its pair's), so stage times include waiting for a core.

The scenes are still photos, so after each clip's first frame faces are searched only where a frame changed
(`memorize.perception.face_search_changes`). Every frame searched whole (what footage that changes everywhere every
second costs, a moving camera or constant cuts): **{r['whole_frames']['realtime_factor']:.1f}x real time** (one run,
faces {r['whole_frames']['faces_s'] / minutes:.2f} s per minute of video). Real footage with more faces per frame
and shorter face tracks costs more face time per minute.

| stage | total | per minute of video |
|---|---|---|
{rows}

{text_section(r.get("text", {}), r["realtime_factor"])}

Identity: {r['face_nodes']} face nodes and {r['voice_nodes']} voice nodes for {r['people']} people, purity
{r['purity']:.0%}, one face node per person: {r['one_face_node_each']}, one voice node per person:
{r['one_voice_node_each']}, characters after equivalence: {r['characters']}.
"""


def text_section(t: dict, factor: float) -> str:
    """The on-screen text part of the report: the cost of reading, with and without, on the same machine."""
    if not t.get("backend"):
        return "On-screen text reading was off in this run."
    rows = "\n".join(f"| {label} | {w['video_seconds']:.0f} s | {w['realtime_factor']:.1f}x | {w['frames_per_clip']:.1f} | "
                     f"{w['regions_per_clip']:.1f} | {w['frame_ms']:.0f} ms | {w['text_lines']} |"
                     for label, w in t.get("writing", {}).items())
    return f"""On-screen text ({t['backend']}, PP-OCRv4): the runs above read text; the same episode memorized without the
reader, interleaved with them: **{t['without_realtime_factor']:.1f}x real time** (runs: {', '.join(f'{x:.1f} s' for x in
t['without_seconds'])}): with the reader a run goes at {factor / max(t['without_realtime_factor'], 1e-9):.2f}x the speed without it. The
reader looked at {t['frames_per_clip']:.1f} key frames and {t['regions_per_clip']:.1f} changed regions per clip, a median
**{t['frame_ms']:.0f} ms per key frame** (text looked for at 736 px; a frame with no text costs only detection).
Videos full of writing (one run each; the slide deck turns a page every 2 s, so the per-clip caps of 4 key frames
and 3 regions bound it, and the log says what was left unread):

| video | length | real time | key frames read per clip | regions read per clip | per key frame | text lines |
|---|---|---|---|---|---|---|
{rows}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write", type=Path, default=None)
    args = parser.parse_args()
    result = run(args.minutes, args.repeat)
    print(json.dumps(result, indent=1))
    section = render(result, previous_figure(args.write) if args.write else "")
    print(section)
    if args.write:
        from bench.perf_memory import write_section

        write_section(args.write, section, "## Memorization: real-time factor")


if __name__ == "__main__":
    main()
