"""The m3agent CLI on a real DB: JSON shapes and exit codes."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from m3agent.cli import main
from m3agent.memory import MemoryGraph


@pytest.fixture
def db(kitchen, db_path):
    kitchen.close()
    return str(db_path)


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_search_json(db, capsys):
    code, out, _ = run(capsys, "search", db, "plays guitar on the sofa", "--top-k", "2", "--json",
                       "--threshold", "0.1")
    assert code == 0
    data = json.loads(out)
    assert list(data) == ["clips"]
    first = data["clips"][0]
    assert set(first) == {"id", "start", "end", "score", "lines"}
    assert first["id"] == 1 and first["start"] == 30.0
    scores = [c["score"] for c in data["clips"]]
    assert scores == sorted(scores, reverse=True)


def test_search_before_clip_and_text_output(db, capsys):
    code, out, _ = run(capsys, "search", db, "cooks pasta in the kitchen", "--before-clip", "2", "--json",
                       "--threshold", "0.05", "--top-k", "5")
    assert code == 0 and all(c["id"] <= 2 for c in json.loads(out)["clips"])
    code, out, _ = run(capsys, "search", db, "cooks pasta", "--threshold", "0.1")
    assert code == 0 and "clip 3" in out and "cooks pasta" in out


def test_export_and_inspect(db, capsys):
    code, out, _ = run(capsys, "export", db)
    data = json.loads(out)
    assert code == 0 and data["schema"] == 1 and len(data["clips"]) == 4
    assert {"id", "kind", "clip", "text", "entities", "weight"} <= set(data["nodes"][2])
    code, out, _ = run(capsys, "inspect", db, "--json", "--check")
    info = json.loads(out)
    assert code == 0 and info["integrity"] == "ok" and info["videos"][0]["clips"] == 4
    code, out, _ = run(capsys, "inspect", db)
    assert code == 0 and "kitchen" in out


def test_config_override_from_cli(db, capsys):
    code, out, _ = run(capsys, "--set", "memory.search.top_k=1", "--set", "memory.search.threshold=0.05",
                       "search", db, "kitchen", "--json")
    assert code == 0 and len(json.loads(out)["clips"]) == 1
    code, _, err = run(capsys, "--set", "memory.search.nope=1", "search", db, "kitchen")
    assert code == 2 and "unknown config key" in err


def test_forget_command(db, capsys, kitchen):
    a = kitchen.ids["alice_face"]
    code, out, _ = run(capsys, "forget", db, f"character_{a}")
    assert code == 0 and json.loads(out)["character"] == f"character_{a}"
    code, _, err = run(capsys, "forget", db, f"character_{a}")
    assert code == 2 and "no <character_" in err


def test_bad_files_exit_2(tmp_path, capsys):
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"\x00garbage" * 64)
    for argv in (["inspect", str(tmp_path / "missing.db")], ["search", str(garbage), "x"],
                 ["export", str(garbage)], ["forget", str(tmp_path / "missing.db"), "character_0"],
                 ["import-m3", str(tmp_path / "missing.pkl"), str(tmp_path / "new.db")]):
        code, out, err = run(capsys, *argv)
        assert code == 2, argv
        assert err.startswith("m3agent ") and "Traceback" not in err
    assert not (tmp_path / "missing.db").exists()  # reading never creates a file


def test_damaged_pages_exit_2(db, capsys):
    data = bytearray(open(db, "rb").read())
    page = 8192
    for start in range(2 * page, len(data), page):  # keep the header and schema page, wreck the rest
        data[start + 8 : start + page] = b"\xde\xad\xbe\xef" * ((page - 8) // 4)
    with open(db, "wb") as fh:
        fh.write(data)
    for argv in (["export", db], ["search", db, "kitchen"], ["inspect", db, "--check"]):
        code, _, err = run(capsys, *argv)
        assert code == 2, argv
        assert "corrupt" in err or "malformed" in err


def test_unknown_backend_is_one_line_naming_the_setting(db, capsys):
    code, out, err = run(capsys, "--set", "control.chat.backend=nope", "ask", db, "Who plays guitar?")
    assert code == 2 and out == ""
    assert err.strip() == ("m3agent ask: error: control.chat.backend: unknown chat backend 'nope'; known: "
                           "llamacpp, openai, scripted, transformers, vllm, auto")


def run_without_override(argv, cwd):
    """The CLI in a process that file permissions bind (root bypasses them unless it drops the capability)."""
    command = [sys.executable, "-m", "m3agent.cli", *argv]
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("needs setpriv (util-linux) to drop root's permission override")
        command = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", *command]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=120)


def test_read_only_file_and_folder(kitchen, db_path, tmp_path):
    a = kitchen.ids["alice_face"]
    kitchen.close()
    folder = tmp_path / "locked"
    folder.mkdir()
    inner = folder / "inner.db"
    shutil.copy(db_path, inner)
    os.chmod(db_path, 0o444)
    os.chmod(folder, 0o555)
    try:
        for target, shown in ((db_path, str(db_path)), (inner, f"{inner} (its folder {folder})")):
            done = run_without_override(["search", str(target), "plays guitar", "--threshold", "0.1"], tmp_path)
            assert done.returncode == 0 and "plays guitar" in done.stdout, done.stderr  # reading needs no write
            done = run_without_override(["forget", str(target), f"character_{a}"], tmp_path)
            assert done.returncode == 2 and done.stdout == ""
            assert done.stderr.startswith(f"m3agent forget: error: {shown} is read-only")
            assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        done = run_without_override(["import-m3", str(tmp_path / "none.pkl"), str(folder / "new.db")], tmp_path)
        assert done.returncode == 2 and "Traceback" not in done.stderr
    finally:
        os.chmod(folder, 0o755)
        os.chmod(db_path, 0o644)
    with MemoryGraph.open(db_path, readonly=True) as graph:  # nothing was lost
        assert len(graph.clips(kitchen.video)) == 4 and a in graph.characters(kitchen.video).members
