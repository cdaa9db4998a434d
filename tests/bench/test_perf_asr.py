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
