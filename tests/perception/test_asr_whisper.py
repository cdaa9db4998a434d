"""The bundled Whisper on real read speech: two clips' speech recognised in one pass says what each clip
says alone, each word back in its own clip."""

import difflib
import re

import numpy as np
import pytest

from m3agent.media.clips import audio_excerpt
from tests.data import SPEECH

LIBRISPEECH = SPEECH / "librispeech_test-other"
SR = 16_000


def words(segments) -> set[str]:
    return {w for s in segments for w in re.findall(r"[a-z']+", s.text.lower())}


def similarity(a, b) -> float:
    """How alike two transcripts read, letter by letter (Whisper's int8 kernels differ between CPUs, so the same
    audio in another window may come out as "Carl to a case" instead of "college or case": a word set would call
    that half different; letter by letter it is 0.9 alike, and another utterance about 0.3)."""
    text = [" ".join(re.findall(r"[a-z']+", " ".join(s.text for s in side).lower())) for side in (a, b)]
    return difflib.SequenceMatcher(None, *text).ratio()


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
    for segments, single, other, (_, start, end) in zip(together, alone, alone[::-1], clips):
        assert segments and all(start - 0.5 <= s.start and s.end <= end + 0.5 for s in segments)
        assert similarity(segments, single) >= 0.8 > similarity(segments, other) + 0.3, (segments, single)
    assert not words(together[0]) >= words(together[1])  # the clips' words did not run together
