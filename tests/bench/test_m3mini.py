"""The mini M3-Bench: its annotations are M3-Bench's exact schema and follow from its scripts; it runs end to end."""

import json
import math

import pytest

from bench.m3mini import build
from bench.m3mini.scripts import SCENE_SECONDS, VIDEOS
from m3agent.eval.annotations import M3_TYPES, read_annotations, timestamp_seconds
from tests.data import M3BENCH

REAL = json.loads((M3BENCH / "robot.json").read_text())


def test_annotations_have_the_exact_robot_schema():
    mini = json.loads(build.ANNOTATIONS.read_text())
    real_video = next(iter(REAL.values()))
    real_qa = real_video["qa_list"][0]
    assert len(mini) >= 3
    for entry in mini.values():
        assert entry.keys() == real_video.keys()
        for qa in entry["qa_list"]:
            assert qa.keys() == real_qa.keys()
            assert all(type(qa[k]) is type(real_qa[k]) for k in qa)
            assert qa["before_clip"] == math.floor(timestamp_seconds(qa["timestamp"]) / 30) - 1 >= 0


def test_committed_files_are_what_the_scripts_say():
    assert json.loads(build.ANNOTATIONS.read_text()) == build.annotations()
    assert json.loads(build.EVIDENCE.read_text()) == build.evidence()


def test_every_kind_of_question_is_there():
    items = read_annotations(build.ANNOTATIONS)
    assert {t for i in items for t in i.types} == set(M3_TYPES) and not any(i.problem for i in items)
    assert all(i.evidence for i in items)
    assert len({len(v.people) for v in VIDEOS}) >= 1 and all(len(v.people) >= 3 for v in VIDEOS)
    last_clip = {v.id: int(len(v.scenes) * SCENE_SECONDS // 30) - 1 for v in VIDEOS}
    early = [i for i in items if i.before_clip < last_clip[i.video]]
    assert early and all(max(i.evidence) <= i.before_clip for i in early)  # answerable only before a later clip
    later = {(i.video, i.question.removesuffix(" now?").rstrip("?")) for i in items if i.before_clip == last_clip[i.video]}
    assert any((i.video, i.question.rstrip("?")) in later for i in early)  # the same fact asked again at the end
    assert any(len(i.evidence) >= 2 for i in items)  # needs two clips
    assert any(i.question.startswith("Who said") and "Cross-Modal Reasoning" in i.types for i in items)
    names = {p.name for v in VIDEOS for p in v.people.values()}
    for video in VIDEOS:  # every person says their name in their first scene
        for key, person in video.people.items():
            first = next(line for who, _, line in video.scenes if who == key)
            assert person.name in first and person.name in names


@pytest.mark.models
@pytest.mark.slow
def test_one_video_builds_with_the_timings_the_annotations_assume(tmp_path):
    video = VIDEOS[0]
    path = build.build_video(video, tmp_path)
    from m3agent.media import probe

    assert abs(probe(path).duration - len(video.scenes) * SCENE_SECONDS) < 0.5
    assert build.build_video(video, tmp_path) == path  # a finished video is kept


def test_the_scripted_answerer_picks_the_line_sharing_most_words():
    from bench.m3mini.run import closest_line
    from m3agent.control.text import KNOWLEDGE_PREFIX

    notes = (KNOWLEDGE_PREFIX + '"keys":\nCLIP_0 (00:00-00:30):\n- David is on screen.\n'
             '- At 00:05 David says: "The car keys are in the blue bowl."\n\nRound 1 of 5.')
    messages = [{"role": "system", "content": "..."}, {"role": "user", "content": notes},
                {"role": "user", "content": "Round 2 of 5.\n\nQuestion: Where are the car keys?"}]
    assert closest_line(messages).endswith('says: "The car keys are in the blue bowl."')
    assert closest_line(messages[-1:]).endswith("Content: unknown")


@pytest.mark.models
@pytest.mark.slow
def test_the_mini_benchmark_runs_end_to_end_with_the_embedded_stack(tmp_path):
    """Builds the four videos, memorizes them (faces, voices, speech, on-screen text: the real embedded models), answers every
    question with the bundled SmolLM2-135M and with the scripted answerer, judges and reports."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (M3AGENT_SKIP_LLAMACPP=1)")
    from bench.m3mini.run import run

    items = read_annotations(build.ANNOTATIONS)
    embedded = run("embedded", tmp_path / "out-embedded", quiet=True, cache=tmp_path)
    assert embedded["overall"]["total"] == len(items) == embedded["overall"]["answered"]
    assert set(embedded["by_type"]) == set(M3_TYPES) and len(embedded["by_video"]) == len(VIDEOS)
    assert (tmp_path / "out-embedded" / "accuracy_by_type.png").stat().st_size > 10_000
    scripted = run("scripted", tmp_path / "out-scripted", quiet=True, cache=tmp_path)  # memories are reused
    assert scripted["overall"]["answered"] == len(items)
    assert scripted["evidence"]["rate"] >= 0.7  # memorization and search bring the evidence clip back
    assert scripted["overall"]["correct"] >= len(items) // 3
    # the questions only text on screen answers (signs, slides, a caption nobody says aloud): OCR puts the text in
    # memory, search brings it back, and the scripted answerer reads it off the line
    on_screen = scripted["by_video"]["m3mini_platforms"]
    assert on_screen["correct"] >= on_screen["total"] - 1


def test_results_of_another_adapter_are_dropped_not_reused(tmp_path):
    from bench.m3mini.run import CONTROLS, _drop_if_other_adapter
    from m3agent.files.outfolder import MARKER

    out = tmp_path / "out-embedded"
    out.mkdir()
    (out / MARKER).write_text(json.dumps({"command": "bench m3", "belongs": {"control.chat.adapter file": "old"}}))
    _drop_if_other_adapter(out, CONTROLS["untrained"])  # no adapter now: the old answers go
    assert not out.exists()
    out.mkdir()
    (out / MARKER).write_text(json.dumps({"command": "bench m3", "belongs": {"control.chat.adapter file": ""}}))
    _drop_if_other_adapter(out, CONTROLS["untrained"])  # the same (none): kept, so a stopped run resumes
    assert (out / MARKER).is_file()
