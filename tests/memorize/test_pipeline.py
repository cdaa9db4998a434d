"""Memorizing real videos with the embedded models: identities, equivalences, facts, resume, bad input."""

import json
import subprocess

import numpy as np
import pytest

from m3agent.config import MemorizeConfig, load_config
from m3agent.factory import memorization_stack
from m3agent.memorize import memorize_video
from m3agent.memory import MemoryGraph, NodeKind
from m3agent.samples.synth import Scene, build_episode, who_at
from tests.data import VIDEO_CLIP
from tests.episode import FACTS, PEOPLE

pytestmark = pytest.mark.models


@pytest.fixture(scope="session")
def stack():
    config = load_config()
    return (config, *memorization_stack(config))


def memorize(path, db, stack, **kwargs):
    config, perceiver, memorizer, embedder = stack
    graph = MemoryGraph.open(db, config.memory, embedder=embedder)
    report = memorize_video(path, graph, perceiver, kwargs.pop("memorizer", memorizer), config.memorize,
                            progress=False, **kwargs)
    return graph, report


@pytest.fixture(scope="session")
def episode_graph(episode_video, stack, tmp_path_factory):
    path, timings = episode_video
    db = tmp_path_factory.mktemp("mem") / "episode.db"
    graph, report = memorize(path, db, stack, log_path=str(db) + ".log")
    yield graph, report, timings, db
    graph.close()




def test_each_person_is_one_face_node_and_one_voice_node(episode_graph):
    graph, report, timings, _ = episode_graph
    assert report.clips_done == 5 and report.clips_total == 5
    data = graph.export()
    faces = [n for n in data["nodes"] if n["kind"] == "face"]
    voices = [n for n in data["nodes"] if n["kind"] == "voice"]
    assert len(faces) == len(PEOPLE) and len(voices) == len(PEOPLE)
    # purity: every on-screen line of a face node falls in one person's scenes
    face_person = {}
    for node in data["nodes"]:
        if node["kind"] == "episodic" and "on screen" in node["text"] and node["text"].startswith("<face_"):
            (face,) = node["entities"]
            times = [int(x[:2]) * 60 + int(x[3:]) for x in __import__("re").findall(r"\d\d:\d\d", node["text"])]
            people = {who_at(timings, sum(times) / len(times), window=0.3)}  # the span's middle
            assert None not in people, node["text"]
            face_person.setdefault(face, set()).update(people)
    assert all(len(p) == 1 for p in face_person.values())
    assert sorted(next(iter(p)) for p in face_person.values()) == sorted(PEOPLE)
    voice_person = {}
    for v in voices:
        people = {who_at(timings, (s["start"] + s["end"]) / 2, speech=True) for s in v["segments"]}
        assert len(people) == 1, (v["id"], people)
        voice_person[v["id"]] = people.pop()
    assert sorted(voice_person.values()) == sorted(PEOPLE)
    # equivalences link each person's face and voice into one character, with the spoken name
    chars = data["characters"]
    assert len(chars) == len(PEOPLE)
    for members in chars.values():
        f = [int(m[5:]) for m in members if m.startswith("face_")]
        v = [int(m[6:]) for m in members if m.startswith("voice_")]
        assert len(f) == 1 and len(v) == 1
        assert face_person[f[0]] == {voice_person[v[0]]}
    names = {face_person[int(m[5:])].pop(): data["names"].get(c) for c, ms in chars.items() for m in ms
             if m.startswith("face_")}
    assert names == {p: PEOPLE[p][1] for p in PEOPLE}


def test_spoken_facts_are_lines_of_the_right_clip(episode_graph):
    graph, _, timings, _ = episode_graph
    lines = [n for n in graph.export()["nodes"] if n["kind"] == "episodic" and "says" in (n["text"] or "")]
    found = 0
    for fact, (person, words) in FACTS.items():
        scene = next(s for s in timings if s.person == person and fact in s.text.lower() or
                     any(w.lower() in s.text.lower() for w in words) and s.person == person)
        hits = [n for n in lines if any(w.lower() in n["text"].lower() for w in words)]
        if any(n["clip"] in {int(scene.speech_start // 30), int(scene.speech_end // 30)} for n in hits):
            found += 1
    assert found >= len(FACTS) - 2  # tiny.en on espeak mishears a word now and then


def test_search_finds_a_spoken_fact(episode_graph):
    graph, _, timings, _ = episode_graph
    result = graph.search("Where does Sarah's sister live and what does she play?", threshold=0.3)
    assert result.clips and any("Toronto" in line or "violin" in line for c in result.clips for line in c.lines)


def test_stage_log_and_report(episode_graph):
    _, report, _, db = episode_graph
    rows = [json.loads(line) for line in open(str(db) + ".log")]
    assert [r["clip"] for r in rows] == [0, 1, 2, 3, 4]
    assert {"decode (wait)", "faces", "asr", "voices"} <= set(rows[0]["seconds"])
    assert report.realtime_factor > 1


class _Crash:
    """Wraps a memorizer and interrupts the run at one clip, as Ctrl-C would."""

    name = "crash"

    def __init__(self, inner, at_clip):
        self.inner, self.at_clip = inner, at_clip

    def describe(self, perception, face_ids, voice_ids):
        if perception.clip.index == self.at_clip:
            raise KeyboardInterrupt
        return self.inner.describe(perception, face_ids, voice_ids)


def test_interrupted_run_resumes_and_rerun_is_a_no_op(episode_video, stack, tmp_path, episode_graph):
    path, _ = episode_video
    db = tmp_path / "resume.db"
    with pytest.raises(KeyboardInterrupt):
        memorize(path, db, stack, memorizer=_Crash(stack[2], 2))
    graph = MemoryGraph.open(db, embedder=stack[3])
    assert [c.id for c in graph.clips(1)] == [0, 1]  # the clip in flight is all that is lost
    graph.close()
    graph, report = memorize(path, db, stack)
    assert report.clips_skipped == 2 and report.clips_done == 3
    data = graph.export()
    assert [c["id"] for c in data["clips"]] == [0, 1, 2, 3, 4]
    assert len([n for n in data["nodes"] if n["kind"] == "face"]) == len(PEOPLE)
    assert len(data["characters"]) == len(episode_graph[0].export()["characters"])
    graph.close()
    graph, again = memorize(path, db, stack)
    assert again.clips_done == 0 and again.clips_skipped == 5
    graph.close()


class _BankRecorder:
    """Wraps the perceiver and keeps, per clip, the identity evidence it matched faces and voices against."""

    def __init__(self, inner):
        self.inner, self.banks = inner, {}

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def perceive(self, clip, face_bank, voice_bank, on_stage=None, upcoming=None, voice_faces=None):
        self.banks[clip.index] = [{node: snaps.copy() for node, snaps in bank.snapshots.items()}
                                  for bank in (face_bank, voice_bank)]
        return self.inner.perceive(clip, face_bank, voice_bank, on_stage, upcoming)


def same_evidence(a: np.ndarray, b: np.ndarray, exact: bool) -> bool:
    """Frames decode identically after a seek, so face snapshots must be equal; audio resampled from a
    seek point differs by a few hundredths, so voice snapshots must be the same rows, nearly equal."""
    if a.shape != b.shape:
        return False
    return bool(np.array_equal(a, b) if exact else np.abs(a - b).max() < 0.05)


def test_resumed_run_matches_identities_against_the_same_evidence(episode_video, stack, tmp_path):
    """With fewer snapshots kept than each person offers, a run interrupted at clip 2 and resumed
    matches every later clip against exactly the evidence an uninterrupted run uses, and ends with
    the same face and voice nodes holding the same embeddings."""
    path, _ = episode_video
    config, perceiver, memorizer, embedder = stack
    memory = load_config(overrides=["memory.face_snapshots=2", "memory.voice_snapshots=2"]).memory

    def run(db, memorizer):
        recorder = _BankRecorder(perceiver)
        with MemoryGraph.open(db, memory, embedder=embedder) as graph:
            try:
                memorize_video(path, graph, recorder, memorizer, config.memorize, progress=False)
            except KeyboardInterrupt:
                pass
        return recorder.banks

    straight = run(tmp_path / "straight.db", memorizer)
    run(tmp_path / "resumed.db", _Crash(memorizer, 2))
    resumed = run(tmp_path / "resumed.db", memorizer)
    assert sorted(resumed) == [2, 3, 4]
    for clip in (2, 3, 4):
        for kind, (a, b) in enumerate(zip(straight[clip], resumed[clip])):
            assert sorted(a) == sorted(b), (clip, kind)
            assert all(same_evidence(a[node], b[node], exact=kind == 0) for node in a), (clip, kind)

    def entities(db):
        with MemoryGraph.open(db, memory, readonly=True) as graph:
            video = graph.resolve_video(None).id
            nodes = [(n["id"], n["kind"], n["clips"]) for n in graph.export()["nodes"] if n["kind"] in ("face", "voice")]
            snaps = {**graph.entity_snapshots(NodeKind.FACE, video), **graph.entity_snapshots(NodeKind.VOICE, video)}
        return nodes, snaps

    (nodes_a, snaps_a), (nodes_b, snaps_b) = entities(tmp_path / "straight.db"), entities(tmp_path / "resumed.db")
    assert nodes_a == nodes_b  # the same nodes, seen in the same clips (transcripts may differ by a word)
    assert sorted(snaps_a) == sorted(snaps_b)
    assert all(same_evidence(snaps_a[n], snaps_b[n], exact=len(snaps_a[n][0]) == 128) for n in snaps_a)
    assert all(len(s) <= 2 for s in snaps_a.values())
    assert any(len(clips) >= 2 for _, kind, clips in nodes_a if kind == "face")  # offered more than it keeps


def test_audio_less_video_gives_faces_only(episode_video, stack, tmp_path):
    path, _ = episode_video
    silent = tmp_path / "silent.mp4"
    subprocess.run(["ffmpeg", "-loglevel", "error", "-i", str(path), "-t", "40", "-an", "-c:v", "copy",
                    str(silent)], check=True)
    graph, report = memorize(silent, tmp_path / "silent.db", stack)
    kinds = [n["kind"] for n in graph.export()["nodes"]]
    assert report.clips_done == 2 and "face" in kinds and "voice" not in kinds
    graph.close()


def test_video_without_faces_gives_voices_only(stack, tmp_path):
    path = tmp_path / "faceless.mp4"
    build_episode([Scene("narrator", None, "en-us+m3", "Nobody can be seen, but my name is Oscar and I am talking.",
                         min_seconds=6)], path)
    graph, report = memorize(path, tmp_path / "faceless.db", stack)
    data = graph.export()
    kinds = [n["kind"] for n in data["nodes"]]
    assert "face" not in kinds and kinds.count("voice") == 1
    assert any("Nobody is visible" in (n["text"] or "") for n in data["nodes"])
    assert data["names"] and list(data["names"].values()) == ["Oscar"]
    graph.close()


def test_real_clip(stack, tmp_path):
    graph, report = memorize(VIDEO_CLIP, tmp_path / "ham.db", stack)
    data = graph.export()
    assert report.clips_done == 1 and any(n["kind"] == "face" for n in data["nodes"])
    assert graph.store.crops(next(n["id"] for n in data["nodes"] if n["kind"] == "face"))[0][2][:2] == b"\xff\xd8"
    graph.close()


def test_cli_memorize_and_bad_files(tmp_path, capsys, episode_video):
    from m3agent.cli import main

    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    assert main(["memorize", str(empty), "--memory", str(tmp_path / "x.db")]) == 2
    assert "empty" in capsys.readouterr().err
    assert main(["memorize", str(tmp_path / "none.mp4"), "--memory", str(tmp_path / "x.db")]) == 2
    short = tmp_path / "short.mp4"
    subprocess.run(["ffmpeg", "-loglevel", "error", "-i", str(episode_video[0]), "-t", "12", "-c", "copy",
                    str(short)], check=True)
    assert main(["memorize", str(short), "--memory", str(tmp_path / "cli.db"), "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["clips_done"] == 1 and out["realtime_factor"] > 0
    assert isinstance(MemorizeConfig().perception.fps, float)
