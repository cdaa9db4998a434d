"""The perceiver's workers: the next clip's bank-free work queued behind this clip's, stages told to
whoever asks for the clip, and a still face embedded once (stand-in backends, no model)."""

import threading

import numpy as np

from m3agent.config import PerceptionConfig
from m3agent.media.clips import MediaClip
from m3agent.perception.asr.base import ASRBackend, Segment
from m3agent.perception.pipeline import Perceiver
from tests.perception.test_small_faces import Boxes


class Local(Boxes):
    """A local backend (its embeddings depend on the pixels near the box only) that counts calls."""

    local = True

    def __init__(self, per_frame):
        super().__init__(per_frame)
        self.located, self.threads = [], set()

    def locate(self, frame, scale=None):
        self.located.append(int(frame[0, 0, 0]))
        self.threads.add(threading.current_thread().name)
        return super().locate(frame)


class Said(ASRBackend):
    name = "said"

    def __init__(self):
        self.heard = []

    def transcribe(self, audio, sample_rate=16_000):
        self.heard.append(float(audio[0]))
        return [Segment(0.5, 2.0, f"clip {audio[0]:.0f}")]


def clip(index, frames=3):
    values = [10 * index + k for k in range(frames)]
    return MediaClip(index, 30.0 * index, 30.0 * index + frames, [np.full((72, 128, 3), v, np.uint8) for v in values],
                     [30.0 * index + k for k in range(frames)], np.full(16_000 * frames, float(index), np.float32))


def test_the_next_clip_is_perceived_ahead_once_and_its_stages_are_told_when_asked():
    backend = Local([[(10, 10, 50, 50)]] * 40)
    asr = Said()
    p = Perceiver(backend, None, asr, PerceptionConfig(face_search_changes=False))
    first, second = clip(0), clip(1)
    out = p.perceive(first, p.face_bank({}), p.voice_bank({}), upcoming=second)
    assert [u.text for u in out.utterances] == ["clip 0"] and len(out.faces) == 1
    heard = []
    out = p.perceive(second, p.face_bank({}), p.voice_bank({}), on_stage=heard.append)
    assert [u.text for u in out.utterances] == ["clip 1"] and out.utterances[0].start == 30.5
    assert sorted(backend.located) == [0, 1, 2, 10, 11, 12] and asr.heard == [0.0, 1.0]  # each once
    assert set(heard) == {"faces", "speech"} and backend.threads == {"m3-faces_0"}


def test_a_clip_other_than_the_one_queued_is_perceived_afresh():
    backend = Local([[(10, 10, 50, 50)]] * 40)
    p = Perceiver(backend, None, Said(), PerceptionConfig(face_search_changes=False))
    p.perceive(clip(0), p.face_bank({}), p.voice_bank({}), upcoming=clip(1))
    out = p.perceive(clip(2), p.face_bank({}), p.voice_bank({}))
    assert [u.text for u in out.utterances] == ["clip 2"] and {20, 21, 22} <= set(backend.located)


def test_a_still_face_is_embedded_once_across_a_track_and_the_next_clip():
    frames = [np.full((720, 1280, 3), 7, np.uint8)] * 5
    backend = Local([[(100, 100, 180, 190)]] * 8)
    p = Perceiver(backend, None, None, PerceptionConfig(face_search_changes=False))  # Boxes ignores crops
    one = MediaClip(0, 0.0, 5.0, frames, [0.0, 1.0, 2.0, 3.0, 4.0])
    two = MediaClip(1, 30.0, 35.0, frames, [30.0, 31.0, 32.0, 33.0, 34.0])
    out = p.perceive(one, p.face_bank({}), p.voice_bank({}))
    p.perceive(two, p.face_bank({}), p.voice_bank({}))
    assert len(out.faces) == 1 and len(out.faces[0].detections) == 5
    assert len(backend.embedded) == 1  # the same pixels: the first face's embedding serves the rest
    moved = [f.copy() for f in frames]
    moved[4][150:160, 120:140] = 200  # the last face differs: embedded again
    p.perceive(MediaClip(2, 60.0, 65.0, moved, [60.0, 61.0, 62.0, 63.0, 64.0]), p.face_bank({}), p.voice_bank({}))
    assert len(backend.embedded) == 2


class Paired(Said):
    """Records which clips each recognition pass covered."""

    def __init__(self):
        super().__init__()
        self.passes = []

    def transcribe_many(self, audios, sample_rate=16_000):
        self.passes.append([int(audio[0]) for audio in audios])
        return super().transcribe_many(audios, sample_rate)


def test_speech_is_recognised_two_clips_at_a_time_the_next_pair_queued_ahead():
    backend = Local([[(10, 10, 50, 50)]] * 60)
    asr = Paired()
    p = Perceiver(backend, None, asr, PerceptionConfig(face_search_changes=False))
    clips = [clip(i) for i in range(5)]
    texts = []
    for i, c in enumerate(clips):
        out = p.perceive(c, p.face_bank({}), p.voice_bank({}), upcoming=clips[i + 1 : i + 3])
        texts.append([u.text for u in out.utterances])
        if i == 1:  # the pair after this clip was queued as soon as both its clips were known
            third, fourth = p._ahead
            assert third.speech is not None and third.speech.job is fourth.speech.job
    assert texts == [[f"clip {i}"] for i in range(5)] and asr.passes == [[0, 1], [2, 3], [4]]
    assert sorted(backend.located) == sorted(10 * i + k for i in range(5) for k in range(3))  # faces once each


def test_closing_the_perceiver_stops_its_threads_and_a_later_clip_starts_them_again():
    backend = Local([[(10, 10, 50, 50)]] * 40)
    others = set(threading.enumerate())  # perceivers of other tests may still hold theirs

    def mine():
        return {t for t in threading.enumerate() if t.name.startswith("m3-") and t not in others}

    with Perceiver(backend, None, Said(), PerceptionConfig(face_search_changes=False)) as p:
        p.perceive(clip(0), p.face_bank({}), p.voice_bank({}), upcoming=clip(1))
        started = mine()
        assert started
    assert not any(t.is_alive() for t in started)
    out = p.perceive(clip(2), p.face_bank({}), p.voice_bank({}))
    assert [u.text for u in out.utterances] == ["clip 2"]
    again = mine() - started
    p.close()
    assert again and not any(t.is_alive() for t in again)


def test_on_screen_text_is_read_in_its_own_worker_and_capped(caplog):
    from tests.perception.test_screen_text import BoardReader

    frames = [np.full((72, 128, 3), 40 * k, np.uint8) for k in range(6)]  # a cut every frame
    reader = BoardReader([])
    p = Perceiver(Local([[]] * 256), None, None, PerceptionConfig(text_frames=2, text_regions=1), text=reader)
    with caplog.at_level("INFO", logger="m3agent.perception.pipeline"):
        out = p.perceive(MediaClip(0, 0.0, 6.0, frames, [float(k) for k in range(6)]), p.face_bank({}),
                         p.voice_bank({}))
    assert len(out.shots) == 6 and out.key_frames == [0, 1] and len(reader.calls) == 2
    assert out.text_reads == {"key_frames": 2, "regions": 0, "unread": 4}
    assert "4 shots and 0 regions left unread" in caplog.text and "text_frames=2" in caplog.text
    blind = Perceiver(Local([[]] * 256), None, None, PerceptionConfig())
    out = blind.perceive(MediaClip(1, 0.0, 6.0, frames, [float(k) for k in range(6)]), blind.face_bank({}),
                         blind.voice_bank({}))
    assert len(out.shots) == 6 and out.texts == [] and out.text_reads == {}  # shots without a reader too
