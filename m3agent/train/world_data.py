"""Write a set of synthetic worlds (:mod:`m3agent.train.worlds`) as a benchmark ``train-data`` reads unchanged.

``OUT/worlds.json`` holds the questions in M3-Bench's robot schema, ``OUT/worlds.evidence.json`` the clips of
their evidence (the sidecar :func:`m3agent.eval.annotations.read_annotations` picks up), ``OUT/worlds.worked.json``
the answers a warm start gives with their working (``train control --worked``), ``OUT/worlds.queries.json`` what
its gold replies search for the second hop of a question (``train control --queries``), ``OUT/worlds.scripts.json``
each world as generated (people, scenes, asks), and ``OUT/memories/WORLD.db`` each world's memory, named as
:func:`m3agent.eval.memories.plan_memory` looks for it, its video or source named by the world's id. So::

    m3agent train-data --annotations OUT/worlds.json --memories OUT/memories --out DATASET

Two renderings:

* ``text`` (fast): each world's lines stored as text records (:func:`m3agent.train.render.records`) through
  :meth:`~m3agent.memory.graph.MemoryGraph.remember`, in a text source cut into 30-second clips like the
  video (its clips carry the video's spans, so the control model reads the same ``CLIP_3 (01:30-02:00)``).
  With ``hear``, a seeded share of them stores the lines as speech recognition hears them
  (:mod:`m3agent.train.hearing`), kept in ``OUT/heard/WORLD.json``; a question whose answer the hearing lost is
  left out of ``worlds.json`` (:func:`m3agent.train.render.answer_heard`).
* ``video`` (the real path): each world rendered into ``OUT/videos/WORLD.mp4`` (photos on screen, espeak-ng
  voices) and memorized by the real pipeline (faces, voices, speech recognition); a world already rendered or
  memorized is kept, so an interrupted run resumes.

Run it as ``python -m m3agent.train.world_data OUT --count 1000 --seed 1``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from m3agent.config import Config
from m3agent.errors import M3AgentError
from m3agent.factory import SharedEmbedders, build_asr, open_memory
from m3agent.train.hearing import heard_lines
from m3agent.train.render import (
    VOICES,
    annotations,
    evidence,
    follow_ups,
    kept_asks,
    records,
    scenes,
    worked,
)
from m3agent.train.worlds import (
    BEFORE_CHANGE,
    CLIP_SECONDS,
    SCENE_SECONDS,
    TYPES,
    World,
    generate_worlds,
)

if TYPE_CHECKING:
    from m3agent.models.embed.base import TextEmbedder

ANNOTATIONS, EVIDENCE, WORKED, SCRIPTS = "worlds.json", "worlds.evidence.json", "worlds.worked.json", "worlds.scripts.json"
QUERIES = "worlds.queries.json"
HEARD = "heard"  # OUT/heard/WORLD.json: {scene: what speech recognition heard}, for the worlds stored as heard
RENDERS = ("text", "video")
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".bmp")


class WorldRenderError(M3AgentError, RuntimeError):
    """A world's video or memory does not match its script (a scene not 15 s long, clips numbered apart)."""


def write_worlds(out_dir: str | os.PathLike[str], count: int, seed: int, config: Config, *, render: str = "text",
                 photos_dir: str | os.PathLike[str] | None = None, hear: float = 0.0,
                 progress: bool = True) -> dict[str, Any]:
    """Worlds ``0 .. count - 1`` of ``seed`` written under ``out_dir`` (see the module); a summary: worlds,
    questions (in all, per type, asked before a change), memories built and kept, seconds. ``hear``: with text
    memories, the share of worlds (picked by seed) whose lines are stored as speech recognition hears them."""
    if render not in RENDERS:
        raise ValueError(f"render is one of {', '.join(RENDERS)}, not {render!r}")
    if not 0.0 <= hear <= 1.0 or (hear and render != "text"):
        raise ValueError(f"hear is a share from 0 to 1 of text-rendered worlds, not {hear!r} with {render!r}")
    started = time.perf_counter()
    out = Path(out_dir)
    memories = out / "memories"
    memories.mkdir(parents=True, exist_ok=True)
    worlds = generate_worlds(count, seed)
    _write_json(out / ANNOTATIONS, annotations(worlds))
    _write_json(out / EVIDENCE, evidence(worlds))
    _write_json(out / WORKED, worked(worlds))
    _write_json(out / QUERIES, follow_ups(worlds))
    _write_json(out / SCRIPTS, {world.id: world.to_dict() for world in worlds})
    built = kept = 0
    bar = _progress(worlds, render, progress)
    heard_by_world: dict[str, dict[int, str]] = {}
    if render == "text":
        embedders = SharedEmbedders(config.embedder)  # one embedder for every DB
        hearing = _Hearing(out / HEARD, config)
        for world in bar:
            heard = hearing(world) if is_heard(world, hear) else None
            if heard is not None:
                heard_by_world[world.id] = heard
            added = remember_world(world, memories / f"{world.id}.db", config, embedders=embedders,
                                   heard=heard)["added"]
            built, kept = built + bool(added), kept + (not added)
        if heard_by_world:  # the questions whose answers the hearing lost go
            _write_json(out / ANNOTATIONS, annotations(worlds, heard_by_world))
    else:
        photos = photo_identities(photos_dir)
        stack = None  # the models load when the first world needs memorizing
        for world in bar:
            db = memories / f"{world.id}.db"
            video = render_video(world, out / "videos", photos)
            if is_memorized(world, db, config):
                kept += 1
                continue
            if stack is None:
                from m3agent.factory import memorization_stack

                stack = memorization_stack(config)
            memorize_world(world, video, db, config, stack)
            built += 1
        if stack is not None:
            stack[0].close()  # the perceiver's threads
    asks = [ask for world in worlds for _, ask in kept_asks(world, heard_by_world.get(world.id))]
    types = Counter(t for ask in asks for t in ask.types)
    return {"worlds": len(worlds), "seed": seed, "render": render, "heard": len(heard_by_world),
            "questions": len(asks), "lost_in_hearing": sum(len(world.asks) for world in worlds) - len(asks),
            "questions_per_type": {t: types[t] for t in TYPES},
            "before_change": sum(ask.kind == BEFORE_CHANGE for ask in asks),
            "memories_built": built, "memories_kept": kept, "annotations": str(out / ANNOTATIONS),
            "memories": str(memories), "seconds": round(time.perf_counter() - started, 3)}


class _Hearing:
    """A world's lines as speech recognition heard them, heard once and kept in ``DIR/WORLD.json`` so a resumed
    run stores the same lines; the recogniser loads when the first world is heard."""

    def __init__(self, directory: Path, config: Config):
        self._dir, self._config, self._asr = directory, config, None

    def __call__(self, world: World) -> dict[int, str]:
        kept = self._dir / f"{world.id}.json"
        if not kept.is_file():
            self._dir.mkdir(exist_ok=True)
            _write_json(kept, heard_lines(world, self._recogniser(), VOICES))
        return {int(scene): text for scene, text in json.loads(kept.read_text("utf-8")).items()}

    def _recogniser(self):
        if self._asr is None:
            self._asr = build_asr(self._config.memorize.perception)
            if self._asr is None:
                raise ValueError("hear needs a speech-recognition backend (memorize.perception.asr_backend)")
        return self._asr


def is_heard(world: World, share: float) -> bool:
    """Whether ``world`` is one of the ``share`` of its set stored as heard (a seeded draw per world)."""
    return share > 0 and random.Random(f"{world.id}/heard").random() < share


def remember_world(world: World, db: str | os.PathLike[str], config: Config, *,
                   embedder: TextEmbedder | None = None, embedders: SharedEmbedders | None = None,
                   heard: Mapping[int, str] | None = None) -> dict[str, Any]:
    """The world's lines as a text memory in ``db`` (created if new): a text source named by the world's id,
    cut into 30-second clips (one session each) whose spans are the video's. Storing it again adds nothing.
    ``heard``: the lines as speech recognition heard them (:func:`m3agent.train.hearing.heard_lines`)."""
    with open_memory(db, config, embedder=embedder, embedders=embedders, create=True) as graph:
        if not any(v.name == world.id for v in graph.videos()):  # a text source in the video's clips
            graph.add_video(world.id, None, world.duration, CLIP_SECONDS, {"kind": "text"})
        report = graph.remember(world.id, records(world, heard))
        video = graph.resolve_video(world.id)
        clips = graph.clips(video.id)
        if [c.id for c in clips] != list(range(world.clips)):
            raise WorldRenderError(f"{db}: {world.id} was stored in clips {[c.id for c in clips]}, "
                                   f"not 0-{world.clips - 1}")
        wrong = [c.id for c in clips if (c.start, c.end) != _span(c.id)]
        if wrong:
            raise WorldRenderError(f"{db}: clips {wrong} of {world.id} do not span the video's 30-s clips")
        return report.to_dict()


def _span(clip: int) -> tuple[float, float]:
    return clip * CLIP_SECONDS, (clip + 1) * CLIP_SECONDS


def render_video(world: World, videos_dir: str | os.PathLike[str], photos: Sequence[str | Sequence[str]]) -> Path:
    """``videos_dir/WORLD.mp4`` (kept when it and its timings exist), every scene checked to last 15 s."""
    from m3agent.samples.synth import build_episode, read_timings

    path = Path(videos_dir) / f"{world.id}.mp4"
    if path.exists() and path.with_suffix(".json").exists():
        timings = read_timings(path)
    else:
        timings = build_episode(scenes(world, photos, path.parent / f"{world.id}-pictures"), path)
    for index, timing in enumerate(timings):
        start = index * SCENE_SECONDS
        if abs(timing.start - start) > 1e-6 or abs(timing.end - timing.start - SCENE_SECONDS) > 1e-6:
            raise WorldRenderError(f"{path}: scene {index} spans {timing.start:.2f}-{timing.end:.2f} s, not "
                                   f"{start:.0f}-{start + SCENE_SECONDS:.0f} s: its line is too long to say")
    return path


def is_memorized(world: World, db: str | os.PathLike[str], config: Config) -> bool:
    """Whether ``db`` holds the world's video with every clip memorized."""
    if not Path(db).is_file():
        return False
    with open_memory(db, config, readonly=True) as graph:
        video = next((v for v in graph.videos() if v.name == world.id), None)
        return video is not None and graph.last_clip(video.id) >= world.clips - 1


def memorize_world(world: World, video: str | os.PathLike[str], db: str | os.PathLike[str], config: Config,
                   stack: tuple) -> dict[str, Any]:
    """Memorize the world's video into ``db`` under the world's id with the real pipeline (``stack``:
    :func:`m3agent.factory.memorization_stack`); a partial memory is resumed."""
    from m3agent.memorize import memorize_video

    perceiver, memorizer, embedder = stack
    with open_memory(db, config, embedder=embedder, create=True) as graph:
        report = memorize_video(video, graph, perceiver, memorizer, config.memorize, name=world.id, progress=False)
    return report.to_dict()


def photo_identities(folder: str | os.PathLike[str] | None = None) -> list[list[str]]:
    """The photos of each identity in ``folder``: a subfolder is one person (its images), loose images are
    grouped by name without a trailing number (``david_1.jpg``, ``david_2.jpg``). None: the photos shipped in
    ``m3agent/assets/faces`` (three people; a fourth person of a world is then an off-screen voice)."""
    root = Path(folder) if folder is not None else Path(str(resources.files("m3agent").joinpath("assets", "faces")))
    if not root.is_dir():
        raise FileNotFoundError(f"photo folder not found: {root}")
    groups: dict[str, list[str]] = {}
    for entry in sorted(root.iterdir()):
        if entry.is_dir():
            images = [str(p) for p in sorted(entry.iterdir()) if p.suffix.lower() in IMAGE_SUFFIXES]
            if images:
                groups[entry.name] = images
        elif entry.suffix.lower() in IMAGE_SUFFIXES:
            groups.setdefault("file:" + (re.sub(r"[_-]?\d+$", "", entry.stem) or entry.stem), []).append(str(entry))
    if not groups:
        raise FileNotFoundError(f"no photos in {root}")
    return list(groups.values())


def _progress(worlds: list[World], render: str, enabled: bool):
    from tqdm import tqdm

    return tqdm(worlds, desc=f"worlds ({render})", unit="world", disable=not enabled, dynamic_ncols=True)


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def main(argv: Sequence[str] | None = None) -> None:
    from m3agent.config import load_config

    parser = argparse.ArgumentParser(description="Write synthetic training worlds: annotations and memories.")
    parser.add_argument("out", type=Path, help="output folder")
    parser.add_argument("--count", type=int, default=100, help="how many worlds (default 100)")
    parser.add_argument("--seed", type=int, default=0, help="the set's seed (default 0)")
    parser.add_argument("--render", choices=RENDERS, default="text", help="text memories (fast) or real videos")
    parser.add_argument("--photos", type=Path, help="video: a folder of photos, a subfolder per person")
    parser.add_argument("--hear", type=float, default=0.0,
                        help="text: share of worlds stored as speech recognition hears their lines (default 0)")
    parser.add_argument("--config", type=Path, help="a config TOML file")
    args = parser.parse_args(argv)
    summary = write_worlds(args.out, args.count, args.seed, load_config(args.config), render=args.render,
                           photos_dir=args.photos, hear=args.hear)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
