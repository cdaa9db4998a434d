"""The sample episode the project ships, and ``m3agent demo``: build it, memorize it, ask about it.

Three people (photos shipped in ``m3agent/assets/faces``, MIT-licensed; fictional names) with
distinct espeak-ng voices say a known script over ~2 minutes. Answers come from memory search:
each question shows the best memory line and its evidence clips. (The multi-round control model
that writes free-form answers plugs in on top of the same search.)
"""

from __future__ import annotations

import time
from importlib import resources
from pathlib import Path

from m3agent.media.synth import Scene, SceneTiming, build_episode

PEOPLE = {  # person -> (espeak-ng voice, spoken name, photos)
    "david": ("en-us+m3", "David", ["david_1.jpg", "david_2.jpg"]),
    "sarah": ("en+f4", "Sarah", ["sarah_1.jpg", "sarah_2.jpg"]),
    "peter": ("en-gb-x-rp+m7", "Peter", ["peter_1.jpg", "peter_2.jpg"]),
}

SCRIPT = [  # (person or None for an empty scene, photo index, line)
    ("david", 0, "Hello, my name is David. I keep my bicycle in the garage."),
    ("sarah", 0, "Hi, I am Sarah. I bought a red umbrella at the market."),
    ("peter", 0, "Good morning, my name is Peter. I work as a chef in a small restaurant."),
    ("david", 1, "Yesterday I planted tomatoes in the garden behind the house."),
    (None, None, ""),
    ("sarah", 1, "My sister lives in Toronto and she plays the violin."),
    ("peter", 1, "Tonight I will cook pasta with mushrooms for everyone."),
    ("david", 0, "The car keys are in the blue bowl on the kitchen table."),
    ("sarah", 0, "I am going to the library tomorrow afternoon to return three books."),
    ("peter", 0, "My favourite football team won the match on Sunday evening."),
]

QUESTIONS = [
    "Where does David keep his bicycle?",
    "What did Sarah buy at the market?",
    "What is Peter's job?",
    "What will Peter cook tonight?",
    "Which instrument does Sarah's sister play?",
]


def photo(name: str) -> str:
    return str(resources.files("m3agent").joinpath("assets", "faces", name))


def scenes(seconds: float = 13.0, photo_path=photo) -> list[Scene]:
    out = []
    for person, index, text in SCRIPT:
        if person is None:
            out.append(Scene(None, None, None, "", min_seconds=seconds))
            continue
        voice, _, photos = PEOPLE[person]
        out.append(Scene(person, photo_path(photos[index]), voice, text, min_seconds=seconds))
    return out


def build_sample_episode(path: str | Path, seconds: float = 13.0) -> list[SceneTiming]:
    return build_episode(scenes(seconds), path)


def run_demo(workdir: str | Path, config, questions: list[str] | None = None, out=print) -> dict:
    """Build (once), memorize (resumable) and query the sample episode; returns what it printed."""
    from m3agent.memorize import build_memorizer, build_perceiver, memorize_video
    from m3agent.memory import MemoryGraph
    from m3agent.models.embed import build_embedder

    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    video, db = workdir / "sample_episode.mp4", workdir / "sample_episode.db"
    t0 = time.perf_counter()
    if not video.exists():
        out(f"building the sample episode: {video}")
        build_sample_episode(video)
    out("loading the offline models (faces, voices, speech, text)")
    perceiver, memorizer = build_perceiver(config.memorize), build_memorizer(config.memorize)
    graph = MemoryGraph.open(db, config.memory, embedder=build_embedder(config.embedder))
    report = memorize_video(video, graph, perceiver, memorizer, config.memorize, log_path=str(db) + ".log")
    video_row = graph.resolve_video(None)
    names = graph.names(video_row.id)
    out(f"memorized {report.clips_total} clips ({report.realtime_factor:.1f}x real time this run); "
        f"characters: " + ", ".join(f"<character_{c}> = {n}" for c, n in sorted(names.items())))
    results = []
    for question in questions or QUESTIONS:
        hits = graph.search(question, threshold=0.2)
        best = _best_line(graph, question, hits)
        out(f"\nQ: {question}\nA: {best or '(nothing in memory matches)'}")
        for clip in hits.clips:
            out(f"   evidence: clip {clip.id} ({clip.start:.0f}-{clip.end:.0f} s), score {clip.score:.2f}")
        results.append({"question": question, "answer": best, "clips": [c.id for c in hits.clips]})
    graph.close()
    summary = {"video": str(video), "db": str(db), "seconds": time.perf_counter() - t0, "answers": results}
    out(f"\ndone in {summary['seconds']:.0f} s; memory DB: {db}")
    return summary


def _best_line(graph, question: str, hits) -> str | None:
    """The single memory line of the returned clips closest to the question, names filled in."""
    import numpy as np

    lines = [line for clip in hits.clips for line in clip.lines]
    if not lines:
        return None
    vectors = graph.embed_queries([question] + lines)
    best = lines[int(np.argmax(vectors[1:] @ vectors[0]))]
    video = graph.resolve_video(None)
    for number, name in graph.names(video.id).items():
        best = best.replace(f"<character_{number}>", name)
    return best
