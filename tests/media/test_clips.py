"""Clip streaming on real files: counts, rates, audio alignment on resume, and bad inputs."""

import subprocess

import numpy as np
import pytest

from m3agent.media import MediaError, iter_clips, probe
from m3agent.samples.synth import Scene, build_episode
from tests.data import FACES
from tests.data import VIDEO_CLIP as HAMILTON


@pytest.fixture(scope="module")
def short_video(tmp_path_factory):
    path = tmp_path_factory.mktemp("media") / "short.mp4"
    build_episode([Scene("a", str(FACES / "obama.jpg"), "en-us+m3", "One two three four five.", min_seconds=7),
                   Scene(None, None, None, "", min_seconds=6),
                   Scene("b", str(FACES / "biden.jpg"), "en+f4", "Six seven eight nine ten.", min_seconds=7)], path)
    return path


def test_clips_frames_and_audio(short_video):
    info = probe(short_video)
    assert info.has_video and info.has_audio and abs(info.duration - 20) < 0.3
    clips = list(iter_clips(short_video, clip_seconds=8, fps=2))
    assert [c.index for c in clips] == [0, 1, 2]
    assert [(c.start, c.end) for c in clips[:2]] == [(0, 8), (8, 16)]
    assert clips[-1].end == pytest.approx(info.duration) and clips[-1].duration < 8  # the last clip is short
    assert [len(c.frames) for c in clips[:2]] == [16, 16]
    assert all(np.all(np.diff(c.frame_times) > 0.4) for c in clips)
    assert all(c.start <= t < c.end for c in clips for t in c.frame_times)
    assert clips[0].frames[0].dtype == np.uint8 and clips[0].frames[0].shape[2] == 3
    assert [len(c.audio) for c in clips[:2]] == [128000, 128000]
    assert clips[0].audio.dtype == np.float32 and np.abs(clips[0].audio).max() > 0.05  # speech
    silent = clips[1].audio[16000 * 1 : 16000 * 5]  # the scene with nobody (about 7-13 s)
    assert np.abs(silent).max() < 0.02


def test_resume_from_a_later_clip_gives_the_same_clip(short_video):
    full = list(iter_clips(short_video, clip_seconds=8, fps=1))
    resumed = list(iter_clips(short_video, clip_seconds=8, fps=1, start_clip=1))
    assert [c.index for c in resumed] == [1, 2]
    for a, b in zip(full[1:], resumed):
        assert a.frame_times == pytest.approx(b.frame_times, abs=0.05)
        assert len(a.audio) == len(b.audio)
        n = len(a.audio)
        if np.abs(a.audio).max() > 0.05:  # speech in this clip: it must line up within 1 ms
            corr = np.correlate(a.audio, b.audio, "full")
            assert abs(int(np.argmax(corr)) - (n - 1)) <= 16
        # after the decoder's first frames (AAC has no history right after a seek) the samples agree
        assert np.sqrt(np.mean((a.audio[1600:] - b.audio[1600:]) ** 2)) < 0.01


def test_frames_are_downscaled(short_video):
    clip = next(iter_clips(short_video, 8, 1, max_side=640))
    assert max(clip.frames[0].shape[:2]) == 640


def test_real_clip_with_music_and_faces():
    clips = list(iter_clips(HAMILTON, clip_seconds=30, fps=1))
    assert len(clips) == 1 and 9 <= len(clips[0].frames) <= 11
    assert len(clips[0].audio) == pytest.approx(10.02 * 16000, abs=400)


def test_audio_less_video(tmp_path, short_video):
    silent = tmp_path / "noaudio.mp4"
    subprocess.run(["ffmpeg", "-loglevel", "error", "-i", str(short_video), "-an", "-c:v", "copy", str(silent)],
                   check=True)
    info = probe(silent)
    assert info.has_video and not info.has_audio
    clips = list(iter_clips(silent, 8, 1))
    assert len(clips) == 3 and all(c.audio.size == 0 for c in clips) and clips[0].frames


def test_bad_files(tmp_path, short_video):
    with pytest.raises(MediaError, match="not found"):
        probe(tmp_path / "missing.mp4")
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    with pytest.raises(MediaError, match="empty"):
        probe(empty)
    text = tmp_path / "text.mp4"
    text.write_text("this is not a video\n" * 100)
    with pytest.raises(MediaError, match="not a readable video"):
        probe(text)
    data = short_video.read_bytes()
    bad_codec = tmp_path / "badcodec.mp4"
    bad_codec.write_bytes(data.replace(b"avc1", b"zzz1").replace(b"avcC", b"zzzC"))
    info = probe(bad_codec)  # video undecodable: what can be read (the audio) is still used
    assert not info.has_video and info.has_audio
    clips = list(iter_clips(bad_codec, 8, 1))
    assert clips and not clips[0].frames and clips[0].audio.size
    video_only = tmp_path / "video_only.mp4"
    subprocess.run(["ffmpeg", "-loglevel", "error", "-i", str(short_video), "-an", "-c:v", "copy", str(video_only)],
                   check=True)
    nothing = tmp_path / "nothing.mp4"
    nothing.write_bytes(video_only.read_bytes().replace(b"avc1", b"zzz1").replace(b"avcC", b"zzzC"))
    with pytest.raises(MediaError, match="unsupported codec"):
        probe(nothing)


def test_truncated_file_yields_what_was_readable(tmp_path, short_video):
    data = short_video.read_bytes()
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(data[: int(len(data) * 0.6)])
    clips = list(iter_clips(cut, 8, 1))
    assert clips and clips[0].frames
    assert len(clips) <= 3


def test_decord_reader_matches_pyav(short_video):
    pytest.importorskip("decord", reason="decord is optional (pip install 'm3agent[decord]')")
    a = list(iter_clips(short_video, 8, 1, max_side=640))
    b = list(iter_clips(short_video, 8, 1, max_side=640, decoder="decord"))
    assert [len(c.frames) for c in a] == [len(c.frames) for c in b]
    for x, y in zip(a, b):
        assert x.frame_times == pytest.approx(y.frame_times, abs=0.1)  # within ~2 frames
        assert x.frames[0].shape == y.frames[0].shape
        assert np.abs(x.frames[0].astype(int) - y.frames[0].astype(int)).mean() < 8
        assert len(x.audio) == len(y.audio)
    resumed = list(iter_clips(short_video, 8, 1, start_clip=2, decoder="decord"))
    assert [c.index for c in resumed] == [2] and resumed[0].frame_times[0] >= 16
    with pytest.raises(ValueError, match="unknown decoder"):
        next(iter_clips(short_video, 8, 1, decoder="opencv"))
