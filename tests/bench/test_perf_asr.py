"""The speech recognition benchmark's word errors, and the beam setting reaching the recogniser."""

import pytest


def test_word_errors_count_substitutions_insertions_and_deletions_after_normalizing():
    from bench.perf_asr import word_errors, words

    assert words("I bought FOUR apples, at 10:45.") == ["i", "bought", "4", "apples", "at", "10", "45"]
    said = words("I bought a red umbrella at the market.")
    assert word_errors(said, said) == 0
    assert word_errors(said, words("I'm Walter Redumbrella to the market.")) == 6  # 4 words swapped, 2 lost
    assert word_errors(said, []) == len(said) and word_errors([], words("uh huh")) == 2


@pytest.mark.models
def test_the_configured_beam_size_reaches_whisper():
    from m3agent.config import PerceptionConfig
    from m3agent.perception.asr.faster_whisper import FasterWhisperASR

    assert FasterWhisperASR.from_config(PerceptionConfig()).beam_size == 5
    assert FasterWhisperASR.from_config(PerceptionConfig(asr_beam_size=1)).beam_size == 1


def test_the_section_gives_each_beam_its_error_rate_and_speed():
    from bench.perf_asr import render

    beams = {1: {"errors": 6, "words": 60, "seconds": 2.0, "misheard": [("v", "a red umbrella", "Redumbrella")]},
             5: {"errors": 3, "words": 60, "seconds": 4.0, "misheard": []}}
    section = render({"videos": ["v"], "speech_seconds": 100.0, "beams": beams})
    assert "| 1 | 10.0% (6/60) | 2.0 s | 50x |" in section and "| 5 | 5.0% (3/60) | 4.0 s | 25x |" in section
    assert 'beam size 1 mishears:\n- v: "a red umbrella" heard as "Redumbrella"' in section
