"""An --out folder is ours when new, empty or marked as our run; anything else is refused untouched."""

import json
import os
import stat

import pytest

from m3agent.config import ControlConfig
from m3agent.files.outfolder import (
    MARKER,
    OutFolderError,
    claim,
    replacing,
    settings,
    staged,
    write_text,
)


def mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_folder_is_created_private_and_marked(tmp_path):
    out = claim(tmp_path / "runs" / "a", "bench m3", {"questions": "f1"})
    assert mode(out) == mode(tmp_path / "runs") == 0o700 and mode(out / MARKER) == 0o600
    assert json.loads((out / MARKER).read_text()) == {"command": "bench m3", "belongs": {"questions": "f1"}}
    claim(out, "bench m3", {"questions": "f1"})  # the same run again: resumed
    empty = tmp_path / "empty"
    empty.mkdir()
    claim(empty, "train-data")
    assert (empty / MARKER).is_file()


def test_a_folder_with_anything_of_someone_else_is_refused_untouched(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(OutFolderError, match="holds files of no m3agent bench m3 run \\(notes.txt\\)"):
        claim(tmp_path, "bench m3", {})
    assert os.listdir(tmp_path) == ["notes.txt"]
    (tmp_path / MARKER).write_text("not json")  # a marker we did not write is no marker
    with pytest.raises(OutFolderError, match="choose another --out"):
        claim(tmp_path, "bench m3", {})
    assert (tmp_path / MARKER).read_text() == "not json"


def test_an_older_run_of_ours_is_adopted(tmp_path):
    (tmp_path / "results.jsonl").write_text("")
    claim(tmp_path, "bench m3", {"a": 1}, older=lambda out: (out / "results.jsonl").exists())
    assert json.loads((tmp_path / MARKER).read_text())["belongs"] == {"a": 1}


def test_another_command_or_other_inputs_are_refused_naming_what_differs(tmp_path):
    claim(tmp_path / "out", "bench m3", {"annotation questions": "f1", "control.max_rounds": 5, "memories": "/m"})
    before = (tmp_path / "out" / MARKER).read_bytes()
    with pytest.raises(OutFolderError, match="holds a run of m3agent bench m3, not of m3agent train-data"):
        claim(tmp_path / "out", "train-data")
    with pytest.raises(OutFolderError, match="made with other annotation questions, control.max_rounds;"):
        claim(tmp_path / "out", "bench m3", {"annotation questions": "f2", "control.max_rounds": 3, "memories": "/m"})
    assert (tmp_path / "out" / MARKER).read_bytes() == before


def test_a_file_or_a_folder_under_a_file_is_a_clean_error(tmp_path):
    (tmp_path / "file").write_text("data")
    with pytest.raises(OutFolderError, match="is a file, not a folder"):
        claim(tmp_path / "file", "train-data")
    with pytest.raises(OutFolderError, match="cannot write into --out .*file/out"):
        claim(tmp_path / "file" / "out", "train-data")
    assert (tmp_path / "file").read_text() == "data"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_a_clean_error(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        with pytest.raises(OutFolderError, match="cannot write into --out"):
            claim(locked, "train-data")
    finally:
        locked.chmod(0o700)


def test_files_are_replaced_at_once_or_not_at_all(tmp_path):
    path = tmp_path / "report.md"
    write_text(path, "old")
    with pytest.raises(RuntimeError), replacing(path) as tmp:
        tmp.write_text("half a rep")
        raise RuntimeError("killed")
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["report.md"]
    with staged(tmp_path) as folder:
        (folder / "report.md").write_text("new")
        (folder / "plot.png").write_bytes(b"png")
    assert path.read_text() == "new" and sorted(os.listdir(tmp_path)) == ["plot.png", "report.md"]


def test_settings_leave_out_how_fast_and_where_a_model_runs():
    flat = settings(ControlConfig(), "control")
    assert flat["control.max_rounds"] == 5 and flat["control.chat.model"] == ""
    assert "control.batch_size" not in flat and "control.chat.retries" not in flat
