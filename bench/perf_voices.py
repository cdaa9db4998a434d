"""Voice identities on real speech: how well each voice backend separates speakers, and how many voice nodes
memorization makes per speaker.

Usage: ``python -m bench.perf_voices [--backends campp resemblyzer] [--per-speaker 5] [--write docs/BENCHMARKS.md]``.

1. Segments: every utterance of the 6 LibriSpeech speakers in ``tests/data/speech`` embedded whole, and cut into
   3-s and 1.5-s pieces; same-speaker and different-speaker cosine similarities, the equal error rate, and
   the milliseconds per segment.
2. Memorization: a 720p episode where each speaker's utterances play under one person's photo (the speakers
   take turns), memorized with the full embedded stack; merges (voice nodes holding two or more speakers, the
   costly error), nodes a person (the voice nodes each speaker is in: above 1, a split, the cheap error), purity.
   Merges and nodes a person as ``bench/perf_identity.py`` counts them (``bench/identity_scores.py``).
3. The espeak sample episode: the same (there must be exactly one voice node each).
4. The three-person interview as sound only: voice nodes, and merges and nodes a person over the three stretches
   where one known person talks alone (the only ground truth there is of who speaks when).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

SPEECH = ROOT / "tests" / "data" / "speech" / "librispeech_test-other"
FACES = ROOT / "tests" / "data" / "faces"
PHOTOS = ["obama.jpg", "biden.jpg", "train_rose_leslie_img1.jpg", "alex-lacamoire.png",
          "lin-manuel-miranda.png", "test_johnsnow_test1.jpg"]
PIECES = {"whole": None, "3 s": 3.0, "1.5 s": 1.5}


def utterances() -> dict[str, list[Path]]:
    return {d.name: sorted(d.glob("*.flac")) for d in sorted(SPEECH.iterdir()) if d.is_dir()}


def load_audio(path: Path) -> np.ndarray:
    """The whole file, 16 kHz mono, read the way memorization reads audio."""
    from m3agent.media.clips import audio_excerpt

    return audio_excerpt(path, 0.0, 1e6)


def equal_error_rate(same: np.ndarray, different: np.ndarray) -> tuple[float, float]:
    """(EER, the cosine where false accepts equal false rejects)."""
    grid = np.linspace(-1, 1, 2001)
    far = np.array([(different >= t).mean() for t in grid])
    frr = np.array([(same < t).mean() for t in grid])
    i = int(np.argmin(np.abs(far - frr)))
    return float((far[i] + frr[i]) / 2), float(grid[i])


def segment_stats(backend) -> dict:
    from m3agent.media.clips import SAMPLE_RATE

    out, spent, count = {}, 0.0, 0
    audio = {spk: [load_audio(p) for p in paths] for spk, paths in utterances().items()}
    for piece, seconds in PIECES.items():
        embs, labels = [], []
        for spk, waves in audio.items():
            for wav in waves:
                n = len(wav) if seconds is None else int(seconds * SAMPLE_RATE)
                for start in range(0, len(wav) - n + 1, n)[:3]:
                    t = time.perf_counter()
                    embs.append(backend.embed(wav[start:start + n], SAMPLE_RATE))
                    spent += time.perf_counter() - t
                    count += 1
                    labels.append(spk)
        e, y = np.stack(embs), np.array(labels)
        iu = np.triu_indices(len(y), 1)
        sims, same = (e @ e.T)[iu], (y[:, None] == y[None])[iu]
        eer, at = equal_error_rate(sims[same], sims[~same])
        out[piece] = {"segments": len(y), "eer": eer, "eer_cosine": at,
                      "same_p5": float(np.percentile(sims[same], 5)),
                      "different_p99": float(np.percentile(sims[~same], 99)),
                      "different_max": float(sims[~same].max())}
    return {"pieces": out, "ms_per_segment": 1000 * spent / count}


def speech_scenes(per_speaker: int, speakers: int = 6):
    """The speakers take turns: utterance k of every speaker, then k + 1, each under its speaker's photo."""
    from m3agent.samples.synth import Scene

    speakers = dict(list(utterances().items())[:speakers])
    scenes = []
    for k in range(per_speaker):
        for (spk, paths), photo in zip(speakers.items(), PHOTOS):
            if k < len(paths):
                scenes.append(Scene(spk, str(FACES / photo), None, min_seconds=2.0, pause=0.6, audio=str(paths[k])))
    return scenes


def memorize(scenes, workdir: Path, overrides: list[str]) -> dict:
    from bench.perf_memorize import purity
    from m3agent import factory
    from m3agent.config import load_config
    from m3agent.memorize import memorize_video
    from m3agent.samples.synth import build_episode

    video = workdir / "episode.mp4"
    timings = build_episode(scenes, video)
    config = load_config(overrides=overrides)
    perceiver, memorizer, embedder = factory.memorization_stack(config)
    graph = factory.open_memory(workdir / "memory.db", config, embedder=embedder, create=True)
    report = memorize_video(video, graph, perceiver, memorizer, config.memorize)
    export = graph.export()
    graph.close()
    return {"video_seconds": report.duration, "seconds": report.seconds, **voice_nodes(export, timings),
            **purity(export, timings)}


def voice_nodes(export: dict, timings) -> dict:
    """Merges and splits of the voice nodes (a node holds each speaker whose speech it holds): ``shared_nodes``,
    the merges; ``nodes_per_speaker``, nodes a person; ``merged``, who is in each merged node."""
    from bench.identity_scores import merged, merges, nodes_a_person, voice_people

    owners = voice_people(export, timings)
    speakers = {s.person for s in timings if s.person}
    return {"speakers": len(speakers), "nodes_per_speaker": nodes_a_person(owners, speakers),
            "shared_nodes": merges(owners), "merged": merged(owners),
            "unheard_speakers": sum(not any(p in who for who in owners.values()) for p in speakers)}


INTERVIEW = ROOT / "tests" / "data" / "speech" / "interview_X2zqiX6yL3I.mp3"
INTERVIEW_TRUTH = [("Kyle Gass", 0.0, 5.5), ("Sean Evans", 6.5, 12.0), ("Jack Black", 17.0, 25.0)]  # tests/data/README.md


def interview(workdir: Path, overrides: list[str]) -> dict:
    """The 3-person interview as sound over an empty picture: voice nodes made; merges and nodes a person over the
    three stretches where one known person talks alone (a node holds the people of the stretches its segments'
    middles fall in; nothing else of the interview is known), and whether they went to three different nodes."""
    from bench.identity_scores import merged, merges, nodes_a_person
    from m3agent import factory
    from m3agent.config import load_config
    from m3agent.memorize import memorize_video
    from m3agent.samples.synth import Scene, build_episode

    video = workdir / "interview.mp4"
    build_episode([Scene(None, None, None, min_seconds=1.0, pause=0.0, audio=str(INTERVIEW))], video,
                  speech_offset=0.0)
    config = load_config(overrides=overrides)
    perceiver, memorizer, embedder = factory.memorization_stack(config)
    graph = factory.open_memory(workdir / "interview.db", config, embedder=embedder, create=True)
    memorize_video(video, graph, perceiver, memorizer, config.memorize, progress=False)
    voices = [n for n in graph.export()["nodes"] if n["kind"] == "voice"]
    graph.close()
    heard = {v["id"]: {person for person, a, b in INTERVIEW_TRUTH for seg in v.get("segments", [])
                       if a <= (seg["start"] + seg["end"]) / 2 <= b} for v in voices}
    owner = {person: sorted(node for node, who in heard.items() if person in who) for person, _, _ in INTERVIEW_TRUTH}
    apart = all(len(n) == 1 for n in owner.values()) and len({n[0] for n in owner.values()}) == len(owner)
    return {"voice_nodes": len(voices), "people": len(owner), "shared_nodes": merges(heard),
            "nodes_per_speaker": nodes_a_person(heard, owner), "merged": merged(heard),
            "known_stretches_apart": apart, "stretch_nodes": owner}


def run(backends: list[str], per_speaker: int, segments: bool = True) -> dict:
    from m3agent import registry
    from m3agent.samples.episode import scenes as sample_scenes

    result = {"segments": {}, "episode": {}, "espeak": {}}
    for name in backends if segments else ():
        result["segments"][name] = segment_stats(registry.load_class("voice", name)())
        print(name, json.dumps(result["segments"][name]), flush=True)
    for name in backends:
        overrides = [f"memorize.perception.voice_backend={name}"]
        with tempfile.TemporaryDirectory(prefix="m3voices-") as tmp:
            result["episode"][name] = memorize(speech_scenes(per_speaker), Path(tmp), overrides)
        print(name, "real speech", json.dumps(result["episode"][name]), flush=True)
        with tempfile.TemporaryDirectory(prefix="m3voices-") as tmp:
            result["espeak"][name] = memorize(sample_scenes(), Path(tmp), overrides)
        print(name, "espeak", json.dumps(result["espeak"][name]), flush=True)
        with tempfile.TemporaryDirectory(prefix="m3voices-") as tmp:
            result.setdefault("interview", {})[name] = interview(Path(tmp), overrides)
        print(name, "interview", json.dumps(result["interview"][name]), flush=True)
    return result


def _label(name: str) -> str:
    from m3agent.config import PerceptionConfig

    return f"{name} (default)" if name == PerceptionConfig().voice_backend else name


def memorization_table(r: dict) -> str:
    """One row per backend and case: merges and nodes a person apart (``voice_nodes``, ``interview``)."""
    def row(name, case, e):
        purity = f"{e['purity']:.0%}" if "purity" in e else "-"
        return (f"| {_label(name)} | {case} | {e['people']} | {e['voice_nodes']} | {e['shared_nodes']} | "
                f"{e['nodes_per_speaker']:.2f} | {purity} | {e.get('characters', '-')} |")

    rows = []
    for name in r["episode"]:
        talk = r["interview"][name]
        apart = "apart" if talk["known_stretches_apart"] else "NOT apart"
        rows += [row(name, "real speech", r["episode"][name]), row(name, "espeak", r["espeak"][name]),
                 row(name, f"interview (known stretches {apart})", talk)]
    return "\n".join(["| backend | case | people | voice nodes | merges | nodes a person | purity | characters |",
                      "|---|---|---|---|---|---|---|---|", *rows])


def render(r: dict, per_speaker: int) -> str:
    """The block ``perf_voices`` of the results file (under its hand-written heading)."""
    from bench.perf_memory import machine

    seg_rows = "\n".join(
        f"| {_label(name)} | " + " | ".join(f"{s['pieces'][p]['eer']:.2%} ({s['pieces'][p]['same_p5']:.2f} / "
                                           f"{s['pieces'][p]['different_max']:.2f})" for p in PIECES)
        + f" | {s['ms_per_segment']:.0f} ms |" for name, s in r["segments"].items())
    first = next(iter(r["episode"].values()))
    return f"""Machine: {machine()}. Date: {date.today().isoformat()}. Command: `python -m bench.perf_voices --write docs/BENCHMARKS.md`.

Segments: 6 LibriSpeech test-other speakers x 10 utterances (`tests/data/speech`), each embedded whole and in up
to three 3-s and 1.5-s pieces. Equal error rate over all pairs, with (5th percentile of same-speaker cosine /
highest different-speaker cosine) in brackets: where the first stays above the second one threshold separates them.

| backend | whole utterance | 3 s | 1.5 s | per segment |
|---|---|---|---|---|
{seg_rows}

Memorization: real speech: {first['speakers']} speakers take turns ({per_speaker} utterances each,
{first['video_seconds']:.0f} s of 720p video), each under one person's photo. espeak: the sample episode (3 voices,
3 people). Interview: the 3-minute three-person interview (people often talk at once) as sound only. A voice node
holds the people speaking at its segments' middles. Merges: voice nodes holding two or more people (the costly
error; 0 is the goal). Nodes a person: the mean number of voice nodes each person is in (1.00 is ideal; above 1,
someone is split over several nodes, the cheap error; below 1, someone is in none). The interview has ground truth only for three stretches
where one known person talks alone (`tests/data/README.md`): its voice nodes are all those made from the 3 minutes,
its merges and nodes a person count only the segments inside those stretches ("apart": each of the three went
to one voice node, a different one). Purity (the share of face and voice nodes holding one person) and characters are
not measured for the interview.

{memorization_table(r)}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=["campp", "resemblyzer"])
    parser.add_argument("--per-speaker", type=int, default=5)
    parser.add_argument("--write", type=Path, default=None, help="update this file's perf_voices block")
    parser.add_argument("--no-segments", action="store_true", help="memorization only (no --write)")
    args = parser.parse_args()
    result = run(args.backends, args.per_speaker, segments=not args.no_segments)
    if args.no_segments:
        print(memorization_table(result))
        return
    section = render(result, args.per_speaker)
    print(section)
    if args.write:
        from bench.markers import replace_block

        replace_block(args.write, "perf_voices", section)


if __name__ == "__main__":
    main()
