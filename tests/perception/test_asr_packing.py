"""FasterWhisperASR packs the speech stretches of a clip (or of two clips) into one Whisper window and splits
the words back by stretch (a stub stands in for Whisper and Silero VAD, so no model is needed)."""

from types import SimpleNamespace

import numpy as np
import pytest

from m3agent.perception.asr import faster_whisper as fw

SR = 16_000


class StubWhisper:
    """Hears one word in the middle of each packed stretch (found as non-zero samples), up to ``limit`` words
    per call, the way Whisper sometimes ends a window early."""

    def __init__(self, limit=99):
        self.limit, self.calls = limit, []

    def transcribe(self, packed, **kwargs):
        self.calls.append(packed.size / SR)
        loud = np.flatnonzero(np.diff(np.r_[0, packed != 0, 0]))  # starts and ends of the stretches
        words = [SimpleNamespace(start=a / SR, end=b / SR, word=f" w{packed[a]:.0f}")
                 for a, b in zip(loud[::2], loud[1::2])][: self.limit]
        return iter([SimpleNamespace(words=words)] if words else []), None


def asr_for(audio, spans, monkeypatch, whisper):
    import faster_whisper.vad

    monkeypatch.setattr(faster_whisper.vad, "get_speech_timestamps",
                        lambda a, o: [{"start": round(s * SR), "end": round(e * SR)} for s, e in spans])
    asr = fw.FasterWhisperASR.__new__(fw.FasterWhisperASR)
    asr._model, asr.language, asr.beam_size, asr.vad_filter = whisper, "en", 1, True
    return asr.transcribe(audio, SR)


def clip(spans, seconds=30.0):
    audio = np.zeros(round(seconds * SR), np.float32)
    for i, (s, e) in enumerate(spans, 1):
        audio[round(s * SR):round(e * SR)] = i  # each stretch "says" its number
    return audio


@pytest.mark.parametrize("limit", [99, 2])
def test_one_window_per_clip_and_words_stay_in_their_stretch(monkeypatch, limit):
    spans = [(0.5, 3.0), (4.0, 9.5), (12.0, 20.0), (21.0, 29.5)]
    whisper = StubWhisper(limit)
    segments = asr_for(clip(spans), spans, monkeypatch, whisper)
    assert [(s.start, s.end, s.text) for s in segments] == [(a, b, f"w{i}") for i, (a, b) in enumerate(spans, 1)]
    # all four fit one window; a window that ends early is followed by one for the stretches not heard
    assert len(whisper.calls) == (1 if limit == 99 else 2)


def test_audio_longer_than_a_window_is_packed_into_several(monkeypatch):
    spans = [(i * 10.0, i * 10.0 + 9.0) for i in range(7)]  # 63 s of speech in 70 s
    whisper = StubWhisper()
    segments = asr_for(clip(spans, 70.0), spans, monkeypatch, whisper)
    assert [s.text for s in segments] == [f"w{i}" for i in range(1, 8)]
    assert len(whisper.calls) == 3 and max(whisper.calls) <= 30.0


def test_without_vad_long_audio_is_cut_into_windows(monkeypatch):
    asr = fw.FasterWhisperASR.__new__(fw.FasterWhisperASR)
    asr._model, asr.language, asr.beam_size, asr.vad_filter = StubWhisper(), "en", 1, False
    segments = asr.transcribe(np.ones(70 * SR, np.float32), SR)
    assert [(s.start, s.end) for s in segments] == [(0.0, 30.0), (30.0, 60.0), (60.0, 70.0)]
    assert asr._model.calls == [30.0, 30.0, 10.0]


def test_two_clips_speech_shares_a_window_and_goes_back_to_its_clip(monkeypatch):
    import faster_whisper.vad

    def vad(audio, options):  # the stretches of non-zero samples
        edges = np.flatnonzero(np.diff(np.r_[0, audio != 0, 0]))
        return [{"start": int(a), "end": int(b)} for a, b in zip(edges[::2], edges[1::2])]

    monkeypatch.setattr(faster_whisper.vad, "get_speech_timestamps", vad)
    asr = fw.FasterWhisperASR.__new__(fw.FasterWhisperASR)
    asr._model, asr.language, asr.beam_size, asr.vad_filter = StubWhisper(), "en", 1, True
    one, two = clip([(1.0, 6.0), (10.0, 14.0)]), clip([(2.0, 8.0)])
    two[two != 0] = 3  # its stretch says "w3"
    quiet = np.zeros(SR, np.float32)
    heard = asr.transcribe_many([one, quiet, two], SR)
    assert [[(s.start, s.end, s.text) for s in segments] for segments in heard] == [
        [(1.0, 6.0, "w1"), (10.0, 14.0, "w2")], [], [(2.0, 8.0, "w3")]]
    assert asr._model.calls == [15.0 + 2 * 0.5]  # 15 s of speech and two gaps: one window for both clips
    more = clip([(0.0, 21.0)])  # with the 9.5 s of the first clip: over 30 s
    asr._model.calls.clear()
    assert [len(s) for s in asr.transcribe_many([one, more], SR)] == [2, 1] and len(asr._model.calls) == 2
