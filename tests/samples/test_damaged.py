"""The damaged-file builders make what they say, checked with ffmpeg's own tools rather than our reader."""

import subprocess

import numpy as np
import pytest
from PIL import Image

from m3agent.samples.damaged import (
    joined_with_audio_gaps,
    marker_video,
    rotated,
    streamed_webm,
    truncated,
)
from tests.data import FACES


def ffprobe(path, *args):
    return subprocess.run(["ffprobe", "-hide_banner", *args, str(path)], capture_output=True, text=True,
                          check=True)


@pytest.fixture(scope="module")
def marker(tmp_path_factory):
    return marker_video(tmp_path_factory.mktemp("builders") / "marker.mp4", seconds=30, marks=(25.0,))


def audio_packets(path):
    """(pts, duration) in seconds of each audio packet, as ffprobe reads them."""
    out = ffprobe(path, "-v", "error", "-select_streams", "a", "-show_entries", "packet=pts_time,duration_time",
                  "-of", "csv=p=0").stdout
    return np.array([[float(x) for x in line.split(",")[:2]] for line in out.split()])


@pytest.mark.parametrize("gap", [1.0, -1.0])
def test_joined_file_has_holes_or_overlaps_in_its_audio(marker, tmp_path, gap):
    joined = joined_with_audio_gaps(marker, tmp_path / "joined.mp4", segment_seconds=10, audio_gap=gap)
    pts = audio_packets(joined)[:, 0]
    jumps = np.diff(pts) - 1024 / 44100  # beyond one AAC frame
    if gap > 0:
        assert np.sum(jumps > 0.9) == 2  # one hole before each of the two joins
    else:  # ffmpeg squeezes the overlapping packets together: at each join, about 1 s of them barely move
        assert np.sum(jumps < -0.02) == pytest.approx(2 * 44100 / 1024, abs=4)


def test_streamed_webm_has_no_duration(marker, tmp_path):
    webm = streamed_webm(marker, tmp_path / "rec.webm")
    assert "Duration: N/A" in ffprobe(webm).stderr


def test_rotated_video_shows_upright_in_ffmpeg(tmp_path):
    photo = FACES / "obama.jpg"
    video = rotated(photo, tmp_path / "portrait.mp4", rotation=-90)
    assert "displaymatrix: rotation of -90.00 degrees" in ffprobe(video).stderr
    shown = tmp_path / "shown.png"  # what ffmpeg, which applies the matrix like a player, shows
    subprocess.run(["ffmpeg", "-loglevel", "error", "-i", str(video), "-frames:v", "1", str(shown)], check=True)
    frame = np.asarray(Image.open(shown).convert("L"), float)
    source = np.asarray(Image.open(photo).convert("L").resize(frame.shape[::-1]), float)
    assert frame.shape[0] > frame.shape[1]
    assert np.corrcoef(frame.ravel(), source.ravel())[0, 1] > 0.95


def test_truncated_cuts_bytes_or_between_packets(marker, tmp_path):
    size = marker.stat().st_size
    assert truncated(marker, tmp_path / "a.mp4", 0.4).stat().st_size == int(size * 0.4)
    whole = tmp_path / "whole.mp4"
    subprocess.run(["ffmpeg", "-loglevel", "error", "-i", str(marker), "-c", "copy", "-movflags", "+faststart",
                    str(whole)], check=True)
    cut = truncated(whole, tmp_path / "b.mp4", at_seconds=20)
    decoded = subprocess.run(["ffmpeg", "-v", "error", "-i", str(cut), "-f", "null", "-"], capture_output=True,
                             text=True)
    # the streams just stop: the demuxer sees that its index goes on ("partial file"), no packet fails to decode
    assert decoded.returncode == 0 and all("partial file" in line for line in decoded.stderr.splitlines())
    last = audio_packets(cut)[-1]
    assert 19 < last[0] + last[1] <= 20.1
