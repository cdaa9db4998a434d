"""The reader keeps data on the video's timeline: audio placed by its timestamps in joined files,
the same samples after a resume, streams without a duration read to their end, rotated videos
upright, and files that end early said to end early."""

import importlib.util
import subprocess

import numpy as np
import pytest

from m3agent.media import iter_clips, probe
from m3agent.media.clips import SAMPLE_RATE
from m3agent.samples.damaged import (
    joined_with_audio_gaps,
    marker_video,
    rotated,
    streamed_webm,
    truncated,
)
from tests.data import FACES

MARK = 55.0  # the flash and the tone of the marker video


@pytest.fixture(scope="module")
def marker(tmp_path_factory):
    return marker_video(tmp_path_factory.mktemp("timeline") / "marker.mp4", seconds=60, marks=(MARK,))


def flash_and_tone(clips):
    """When the picture first turns white and when the tone first sounds, in video seconds."""
    flash = next((t for c in clips for t, f in zip(c.frame_times, c.frames) if f.mean() > 128), None)
    tone = next((c.start + int(np.flatnonzero(np.abs(c.audio) > 0.25)[0]) / SAMPLE_RATE
                 for c in clips if c.audio.size and np.abs(c.audio).max() > 0.25), None)
    return flash, tone


@pytest.mark.parametrize("gap", [1.0, -1.0], ids=["holes", "overlaps"])
def test_audio_of_a_joined_file_stays_next_to_its_picture(marker, tmp_path, gap):
    joined = joined_with_audio_gaps(marker, tmp_path / "joined.mp4", segment_seconds=10, audio_gap=gap)
    clips = list(iter_clips(joined, 30, 10))
    flash, tone = flash_and_tone(clips)
    assert flash == pytest.approx(MARK, abs=0.1)
    assert tone == pytest.approx(flash, abs=0.1)  # placed by timestamps: no drift over 5 joins
    assert len(clips[0].audio) == 30 * SAMPLE_RATE and len(clips[1].audio) >= 29 * SAMPLE_RATE
    hum = clips[0].audio[int(5 * SAMPLE_RATE): int(8.5 * SAMPLE_RATE)]
    assert 0.005 < np.abs(hum).max() < 0.02
    if gap > 0:  # the hole before the first join is silence, the audio after it is back
        hole = clips[0].audio[int(9.1 * SAMPLE_RATE): int(9.9 * SAMPLE_RATE)]
        assert np.abs(hole).max() < 1e-3
        assert np.abs(clips[0].audio[int(10.2 * SAMPLE_RATE): int(10.8 * SAMPLE_RATE)]).max() > 0.005
    resumed = list(iter_clips(joined, 30, 10, start_clip=1))
    assert flash_and_tone(resumed)[1] == pytest.approx(tone, abs=1e-3)


def test_resumed_run_gives_the_same_audio_samples(marker):
    """After a seek the samples land on the same 16 kHz grid as in a run from 0: once the decoder
    has its history back (one AAC frame) they are the same samples, the tone's included."""
    for clip_seconds in (30, 8):
        full = list(iter_clips(marker, clip_seconds, 1))
        for k in range(1, len(full)):
            again = next(iter_clips(marker, clip_seconds, 1, start_clip=k))
            a, b = full[k].audio, again.audio
            assert len(a) == len(b)
            skip = int(0.1 * SAMPLE_RATE)
            assert np.abs(a[skip:] - b[skip:]).max() < 1e-3, (clip_seconds, k)


def test_streamed_webm_without_a_duration_is_read_to_its_end(tmp_path):
    source = marker_video(tmp_path / "source.mp4", seconds=20, marks=(17.0,))
    webm = streamed_webm(source, tmp_path / "recording.webm")
    stream = iter_clips(webm, 8, 2)
    clips = list(stream)
    assert [c.index for c in clips] == [0, 1, 2]
    info = probe(webm)
    assert not info.duration_known and info.n_clips(8) is None
    assert [len(c.frames) for c in clips] == [16, 16, 8]
    assert clips[-1].end == pytest.approx(20, abs=0.1) and stream.end == pytest.approx(20, abs=0.1)
    assert len(clips[-1].audio) == pytest.approx(4 * SAMPLE_RATE, abs=0.1 * SAMPLE_RATE)
    assert not stream.truncated and stream.next_index == 3
    flash, tone = flash_and_tone(clips)
    assert flash == pytest.approx(17, abs=0.3) and tone == pytest.approx(17, abs=0.1)
    resumed = iter_clips(webm, 8, 2, start_clip=2)
    assert [c.index for c in resumed] == [2] and resumed.next_index == 3
    past_the_end = iter_clips(webm, 8, 2, start_clip=3)
    assert list(past_the_end) == [] and past_the_end.next_index == 3 and not past_the_end.truncated
    if importlib.util.find_spec("decord"):  # decord needs the duration: its frames come from PyAV here
        assert [len(c.frames) for c in iter_clips(webm, 8, 2, decoder="decord")] == [16, 16, 8]


def correlation(a, b):
    a, b = a.astype(float).ravel(), b.astype(float).ravel()
    return float(np.corrcoef(a - a.mean(), b - b.mean())[0, 1])


@pytest.fixture(scope="module")
def portrait(tmp_path_factory):
    """The same photo as an upright video and as a phone-style one stored sideways (both rotations)."""
    folder = tmp_path_factory.mktemp("rotated")
    upright = rotated(FACES / "obama.jpg", folder / "upright.mp4", rotation=0)
    turned = {r: rotated(FACES / "obama.jpg", folder / f"turned{r}.mp4", rotation=r) for r in (-90, 90, 180)}
    return upright, turned


@pytest.mark.parametrize("decoder", ["pyav", "decord"])
def test_rotated_video_frames_are_upright(portrait, decoder):
    if decoder == "decord":
        pytest.importorskip("decord", reason="decord is optional (pip install 'm3agent[decord]')")
    upright, turned = portrait
    reference = next(iter_clips(upright, 30, 1, decoder=decoder)).frames[0]
    h, w = reference.shape[:2]
    assert h > w  # a portrait photo
    for rotation, path in turned.items():
        info = probe(path)
        assert (info.width, info.height) == (w, h) and info.rotation == rotation % 360
        frame = next(iter_clips(path, 30, 1, decoder=decoder)).frames[0]
        assert frame.shape == reference.shape and frame.flags["C_CONTIGUOUS"]
        assert correlation(frame, reference) > 0.95, rotation


@pytest.mark.models
def test_the_face_detector_finds_the_face_in_a_rotated_video(portrait):
    from m3agent.perception.faces.dlib import DlibFaceBackend

    faces = DlibFaceBackend()
    _, turned = portrait
    frame = next(iter_clips(turned[-90], 30, 1)).frames[0]
    assert len(faces.locate(frame)) == 1
    assert faces.locate(np.ascontiguousarray(np.rot90(frame))) == []  # as stored, sideways: no face


@pytest.mark.parametrize("cut", ["bytes", "packets"])
def test_a_file_cut_short_says_where_it_ends(tmp_path, marker, cut):
    """An MP4 with its index at the front, cut short: the reader gives the clips it can read, the
    last one ends where the data ends and is marked truncated, and the stream says where that is.
    Cut at 40 % of its bytes the last packet fails to decode; cut between packets at 25 s the
    streams just stop early, which counts as truncated too."""
    whole = tmp_path / "whole.mp4"
    subprocess.run(["ffmpeg", "-y", "-loglevel", "error", "-i", str(marker), "-c", "copy", "-movflags", "+faststart",
                    str(whole)], check=True)
    if cut == "bytes":
        damaged = truncated(whole, tmp_path / "cut.mp4", 0.4)
    else:
        damaged = truncated(whole, tmp_path / "cut.mp4", at_seconds=25)
    assert probe(damaged).n_clips(10) == 6
    stream = iter_clips(damaged, 10, 1)
    clips = list(stream)
    assert 1 < len(clips) < 6 and clips[-1].truncated and all(not c.truncated for c in clips[:-1])
    assert clips[-1].end < 10 * len(clips) and clips[-1].frames
    assert stream.truncated and stream.end == pytest.approx(clips[-1].end)
    if cut == "packets":
        assert stream.error is None and stream.end == pytest.approx(25, abs=0.5)
    again = iter_clips(damaged, 10, 1, start_clip=len(clips))  # a re-run after the last readable clip
    assert list(again) == [] and again.truncated


@pytest.mark.parametrize("codec,suffix", [("aac", "mkv"), ("libvorbis", "ogg")])
def test_timestamp_jitter_neither_inserts_nor_drops_samples(tmp_path, codec, suffix):
    """Matroska rounds timestamps to the millisecond, and Ogg Vorbis frames at a block size switch
    carry timestamps 10 ms off that the next frame takes back: the audio stays one unbroken run,
    sample for sample what a plain decode gives."""
    import av

    path = tmp_path / f"tones.{suffix}"
    tones = "+".join(f"between(t,{m},{m + 0.3})" for m in (3, 6, 9))
    subprocess.run(["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i",
                    f"aevalsrc='0.01*sin(2*PI*300*t)+0.5*sin(2*PI*1000*t)*({tones})':s=44100:d=12",
                    "-c:a", codec, str(path)], check=True)
    resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
    with av.open(str(path)) as container:
        plain = np.concatenate([out.to_ndarray().reshape(-1) for frame in container.decode(audio=0)
                                for out in resampler.resample(frame)])
    placed = np.concatenate([c.audio for c in iter_clips(path, 4, 1)])
    n = min(len(plain), len(placed))
    assert n > 11.9 * SAMPLE_RATE and np.array_equal(placed[:n], plain[:n])
