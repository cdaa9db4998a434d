"""`m3agent demo` end to end: the shipped photos and voices, memorized and queried offline."""

import json

import pytest

pytestmark = pytest.mark.models


def test_demo_end_to_end(tmp_path, capsys):
    from m3agent.cli import main

    assert main(["demo", "--workdir", str(tmp_path), "--json", "--question", "Where does David keep his bicycle?",
                 "--question", "What is the name of the woman with the red umbrella?"]) == 0
    out = capsys.readouterr().out
    assert "<character_0> = David" in out
    summary = json.loads(out[out.index("{\n"):])
    first = summary["answers"][0]
    assert "bicycle" in first["answer"] and 0 in first["clips"]
    assert (tmp_path / "sample_episode.mp4").exists() and (tmp_path / "sample_episode.db").exists()
    # a second run reuses the video and the finished memory
    assert main(["demo", "--workdir", str(tmp_path), "--question", "Who plays the violin?"]) == 0
    assert "memorized 5 clips" in capsys.readouterr().out
