"""`m3agent demo` end to end: the shipped photos and voices, memorized and questioned offline with the
embedded chat model (SmolLM2-135M: its answers are not checked, its evidence is)."""

import json

import pytest

from m3agent.samples.episode import FIXTURE_QUESTIONS, SCRIPT, evidence_clips
from m3agent.samples.synth import read_timings

pytestmark = pytest.mark.models


def test_demo_end_to_end(tmp_path, capsys):
    from m3agent.cli import main

    fast = ["--set", "control.max_rounds=2", "--set", "control.max_tokens=48"]
    assert main([*fast, "demo", "--workdir", str(tmp_path), "--json",
                 "--question", "Where does David keep his bicycle?",
                 "--question", "What is the name of the woman with the red umbrella?"]) == 0
    out = capsys.readouterr().out
    assert "<character_0> = David" in out
    summary = json.loads(out[out.index("{\n"):])
    first = summary["answers"][0]
    assert first["error"] is None and first["answer"]
    assert first["clips"][0] == 0 and "bicycle" in first["evidence"][0]["line"]
    assert first["rounds"][0]["action"] == "search" and first["rounds"][-1]["action"] == "answer"
    assert isinstance(first["unfound"], list)  # the answer's words no note shown holds, said beside it when any
    assert (tmp_path / "sample_episode.mp4").exists() and (tmp_path / "sample_episode.db").exists()
    # a second run reuses the video and the finished memory
    assert main([*fast, "demo", "--workdir", str(tmp_path), "--question", "Who plays the violin?"]) == 0
    text = capsys.readouterr().out
    assert "memorized 5 clips" in text and "evidence: clip 2" in text


def test_fixture_questions_point_at_the_script(tmp_path):
    from m3agent.samples.episode import build_sample_episode

    timings = build_sample_episode(tmp_path / "episode.mp4", seconds=4.0)
    assert read_timings(tmp_path / "episode.mp4") == timings
    for question in FIXTURE_QUESTIONS:
        person, _, line = SCRIPT[question.line]
        assert person is not None and any(w.lower() in line.lower() for w in question.answer_words)
        clips = evidence_clips(timings, question.line, clip_seconds=4.0)
        speech = timings[question.line]
        assert clips and min(clips) == int(speech.speech_start // 4.0)
