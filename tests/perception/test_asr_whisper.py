"""The bundled Whisper on real read speech: two clips' speech recognised in one pass says what each clip
says alone, each word back in its own clip."""

import re

import numpy as np
import pytest

from m3agent.media.clips import audio_excerpt
from tests.data import SPEECH

LIBRISPEECH = SPEECH / "librispeech_test-other"
SR = 16_000


def words(segments) -> set[str]:
    return {w for s in segments for w in re.findall(r"[a-z']+", s.text.lower())}


@pytest.mark.models
def test_two_clips_in_one_pass_hear_what_each_hears_alone():
    from m3agent.perception.asr.faster_whisper import FasterWhisperASR

    asr = FasterWhisperASR()
    speakers = sorted(p for p in LIBRISPEECH.iterdir() if p.is_dir())[:2]
    clips = []
    for folder, at in zip(speakers, (2.0, 9.0)):  # an utterance of up to 10 s in each 30-s clip
        speech = audio_excerpt(sorted(folder.glob("*.flac"))[0], 0.0, 10.0)
        clip = np.zeros(30 * SR, np.float32)
        clip[int(at * SR) : int(at * SR) + speech.size] = speech
        clips.append((clip, at, at + speech.size / SR))
    passes = []
    transcribe = asr._model.transcribe
    asr._model.transcribe = lambda audio, **kw: passes.append(audio.size) or transcribe(audio, **kw)
    together = asr.transcribe_many([c for c, _, _ in clips], SR)
    assert len(passes) == 1 and passes[0] <= 30 * SR  # both clips' speech in one window
    alone = [asr.transcribe(c, SR) for c, _, _ in clips]
    for segments, single, (_, start, end) in zip(together, alone, clips):
        assert segments and all(start - 0.5 <= s.start and s.end <= end + 0.5 for s in segments)
        heard, reference = words(segments), words(single)
        assert len(heard & reference) / len(heard | reference) >= 0.7
    assert not words(together[0]) >= words(together[1])  # the clips' words did not run together
