"""Real speech through the whole memorization: each real speaker one voice node, no node shared."""

import pytest


@pytest.mark.models
def test_real_speakers_each_get_one_voice_node_and_share_none(tmp_path):
    from bench.perf_voices import memorize, speech_scenes

    result = memorize(speech_scenes(per_speaker=3, speakers=4), tmp_path, [])
    assert result["speakers"] == 4 and result["unheard_speakers"] == 0
    assert result["shared_nodes"] == 0
    assert result["nodes_per_speaker"] <= 1.25
    assert result["characters"] <= 5  # each voice joins its speaker's face


def test_equal_error_rate_finds_the_crossing():
    import numpy as np

    from bench.perf_voices import equal_error_rate

    eer, at = equal_error_rate(np.array([0.8, 0.9, 0.7]), np.array([0.1, 0.2, 0.3]))
    assert eer == 0.0 and 0.3 < at <= 0.7
    eer, _ = equal_error_rate(np.array([0.5, 0.9]), np.array([0.6, 0.1]))
    assert eer == 0.5
