"""The app's data folder: nothing outside it, and only real videos come in."""

import os
import shutil
import subprocess

import pytest

from m3agent.workspace.folder import DataFolder, DataFolderError
from tests.data import VIDEO_CLIP as VIDEO


@pytest.fixture
def folder(tmp_path):
    return DataFolder(tmp_path / "data", ".mp4 .webm", max_upload_mb=1)


@pytest.mark.parametrize("path", ["../secret.txt", "uploads/../../secret.txt", "/etc/passwd", "", "a\x00b",
                                  "memories/../../data2/x.db"])
def test_paths_outside_the_folder_are_refused(folder, tmp_path, path):
    (tmp_path / "secret.txt").write_text("no")
    with pytest.raises(DataFolderError):
        folder.resolve(path)


def test_a_symlink_out_of_the_folder_is_refused_and_one_inside_is_followed(folder, tmp_path):
    (tmp_path / "secret.txt").write_text("no")
    os.symlink(tmp_path / "secret.txt", folder.root / "link.mp4")
    with pytest.raises(DataFolderError):
        folder.resolve("link.mp4")
    (folder.root / "real.mp4").write_bytes(b"x")
    os.symlink(folder.root / "real.mp4", folder.root / "alias.mp4")
    assert folder.resolve("alias.mp4") == folder.root / "real.mp4"
    assert folder.resolve(str(folder.root / "real.mp4")) == folder.root / "real.mp4"


def test_listing_finds_videos_and_memories_but_not_the_apps_state(folder):
    (folder.root / "a" / "b").mkdir(parents=True)
    (folder.root / "a" / "b" / "talk.MP4").write_bytes(b"x")
    (folder.state_dir / "hidden.mp4").write_bytes(b"x")
    (folder.memories_dir / "talk.db").write_bytes(b"x")
    (folder.memories_dir / "talk.db-wal").write_bytes(b"x")
    assert folder.videos() == ["a/b/talk.MP4"]
    assert folder.memories() == ["memories/talk.db"]
    assert folder.memory_for("a/b/talk.MP4") == folder.memories_dir / "talk.db"


def test_only_what_the_listing_shows_as_a_video_is_one_the_app_may_serve(folder, tmp_path):
    (folder.root / "a").mkdir()
    (folder.root / "a" / "talk.MP4").write_bytes(b"x")
    (folder.state_dir / "hidden.mp4").write_bytes(b"x")
    (tmp_path / "outside.mp4").write_bytes(b"x")
    db = folder.memories_dir / "talk.db"
    for suffix in ("", "-wal", ".vec", ".lock", ".memorize.jsonl"):
        (folder.memories_dir / f"talk.db{suffix}").write_bytes(b"x")
    os.symlink(db, folder.root / "a" / "alias.mp4")
    os.symlink(folder.root / "a" / "talk.MP4", folder.root / "a" / "alias.db")
    os.symlink(tmp_path / "outside.mp4", folder.root / "a" / "out.mp4")
    os.symlink(folder.root / "a" / "loop.mp4", folder.root / "a" / "loop.mp4")
    assert folder.holds_video("a/talk.MP4") and folder.holds_video(folder.root / "a" / "talk.MP4")
    assert folder.holds_video("a/alias.db")  # a link to a video is that video
    for path in ("a/alias.mp4", "a/out.mp4", "a/loop.mp4", ".app/hidden.mp4", "a", "", "a/talk.MP4\x00",
                 "a/../memories/talk.db", tmp_path / "outside.mp4",
                 *(f"memories/talk.db{s}" for s in ("", "-wal", ".vec", ".lock", ".memorize.jsonl"))):
        assert not folder.holds_video(path), path
    with pytest.raises(DataFolderError):
        folder.resolve("a/loop.mp4")


def test_an_upload_is_checked_as_a_video_then_kept_once(folder, tmp_path):
    temp = tmp_path / "gradio-temp"
    temp.mkdir()
    clip = temp / "clip one.mp4"
    shutil.copyfile(VIDEO, clip)
    folder.max_upload_bytes = 10 * 2**20
    kept = folder.accept_upload(clip, "../../clip one.mp4")
    assert kept == folder.uploads / "clip_one.mp4" and kept.read_bytes() == VIDEO.read_bytes()
    assert folder.accept_upload(clip, "again.mp4") == kept  # same content: no second copy
    assert (kept.stat().st_mode & 0o777) == 0o600


def test_uploads_that_are_not_videos_get_a_clear_reason(folder, tmp_path):
    text = tmp_path / "notes.mp4"
    text.write_text("not a video at all")
    with pytest.raises(DataFolderError, match="not a video the decoder can read"):
        folder.accept_upload(text)
    with pytest.raises(DataFolderError, match="not a video file name"):
        folder.accept_upload(text, "notes.txt")
    big = tmp_path / "big.mp4"
    big.write_bytes(b"\0" * (2 * 2**20))
    with pytest.raises(DataFolderError, match="limit is 1 MB"):
        folder.accept_upload(big)
    empty = tmp_path / "empty.webm"
    empty.write_bytes(b"")
    with pytest.raises(DataFolderError, match="empty"):
        folder.accept_upload(empty)
    sound = tmp_path / "speech.mp4"
    subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=1", "-y", str(sound)],
                   check=True)
    with pytest.raises(DataFolderError, match="no picture stream"):
        folder.accept_upload(sound)
    assert list(folder.uploads.iterdir()) == []
