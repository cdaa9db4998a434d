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
    assert set(first) == {"id", "start", "end", "score", "rank_score", "lexical", "lines"}
    assert first["id"] == 1 and first["start"] == 30.0
    ranks = [c["rank_score"] for c in data["clips"]]
    assert ranks == sorted(ranks, reverse=True)


def test_search_before_clip_and_text_output(db, capsys):
    code, out, _ = run(capsys, "search", db, "cooks pasta in the kitchen", "--before-clip", "2", "--json",
                       "--threshold", "0.05", "--top-k", "5")
    assert code == 0 and all(c["id"] <= 2 for c in json.loads(out)["clips"])
    code, out, _ = run(capsys, "search", db, "cooks pasta", "--threshold", "0.1")
    assert code == 0 and "clip 3" in out and "cooks pasta" in out


def test_export_and_inspect(db, capsys):
    code, out, _ = run(capsys, "export", db)
    data = json.loads(out)
    assert code == 0 and data["schema"] == 2 and len(data["clips"]) == 4
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


# ---------------------------------------------------------------- issue 9: one-line errors, never silent nothing

def one_line_error(capsys, command, *argv):
    """Run the CLI, expecting exit 2 and exactly one line on stderr; returns that line."""
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "", (argv, err)
    assert err.startswith(f"m3agent {command}: error: ") and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("content", [b"\x89PNG\r\n\x1a\n\x00\x00", "caf\xe9 = 1\n".encode("latin-1"), b"[memory\n",
                                     None])
def test_bad_config_files_are_one_line_errors(db, tmp_path, capsys, content):
    path = tmp_path / "m3.toml"
    if content is not None:
        path.write_bytes(content)
    err = one_line_error(capsys, "inspect", "--config", str(path), "inspect", db)
    assert f"cannot read config file {path}" in err


@pytest.mark.parametrize("override, message", [
    ("memorize.perception.fps=0", "memorize.perception.fps must be > 0 (got 0)"),
    ("memorize.perception.clip_seconds=-1", "memorize.perception.clip_seconds must be > 0 (got -1)"),
    ("memory.search.top_k=0", "memory.search.top_k must be > 0 (got 0)"),
    ("memory.search.threshold=nan", "memory.search.threshold must be a finite number (got nan)"),
    ("memory.search.top_k", "override must look like key.path=value"),
    ("=3", "empty config key"),
    ("memory.search.nope=1", "unknown config key 'memory.search.nope'"),
])
def test_bad_settings_are_one_line_errors(db, capsys, override, message):
    assert message in one_line_error(capsys, "search", "--set", override, "search", db, "kitchen")


def test_search_inputs_that_would_silently_find_nothing(db, capsys):
    for query in ("", "   "):
        assert "the search query is empty" in one_line_error(capsys, "search", "search", db, query)
    assert "before_clip must be a clip number >= 0 (got -1)" in one_line_error(
        capsys, "search", "search", db, "cooks pasta", "--before-clip", "-1")
    assert "--top-k must be a whole number from 1 to 10,000 (got 0)" in one_line_error(capsys, "search", "search", db, "cooks pasta",
                                                            "--top-k", "0")
    everything = run(capsys, "search", db, "cooks pasta in the kitchen", "--threshold", "0.05", "--json")
    assert json.loads(everything[1])["clips"]
    for beyond in ("4", "2147483647", str(10**30)):  # past the last clip: all of them
        assert run(capsys, "search", db, "cooks pasta in the kitchen", "--threshold", "0.05", "--json",
                   "--before-clip", beyond) == everything, beyond


def test_ask_inputs_that_would_make_the_model_invent_an_answer(db, capsys, tmp_path):
    with MemoryGraph.open(db) as graph:
        graph.add_video("empty")  # memorization never got to its first clip
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(["Action: [Answer]\nContent: invented"]))
    options = ["--set", "control.chat.backend=scripted", "--set", f"control.chat.model={replies}"]
    for question in ("", " \t"):
        assert "the question is empty" in one_line_error(capsys, "ask", *options, "ask", db, question,
                                                         "--video", "kitchen")
    assert "before_clip must be a clip number >= 0 (got -2)" in one_line_error(
        capsys, "ask", *options, "ask", db, "Who cooks?", "--video", "kitchen", "--before-clip", "-2")
    err = one_line_error(capsys, "ask", *options, "ask", db, "Who cooks?", "--video", "empty")
    assert "memory holds no clip of video 'empty' yet" in err
    code, out, _ = run(capsys, *options, "ask", db, "Who cooks?", "--video", "kitchen", "--before-clip", str(10**30))
    assert code == 0 and out.startswith("an unnamed person cooks pasta in the kitchen")  # a note, not an invention
    assert "round 1: answer; the model said 'invented', which no note shown about the question holds: the note nearest" in out
    code, out, _ = run(capsys, *options, "--set", "control.quote_invented=false", "ask", db, "Who cooks?",
                       "--video", "kitchen")
    assert code == 0 and out.startswith("invented")
    assert "not in the notes shown: invented (the model may have made this up)" in out  # no note says "invented"


def test_ctrl_c_is_one_line(db, capsys, monkeypatch):
    import m3agent.memory.graph

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(m3agent.memory.graph.MemoryGraph, "search", interrupt)
    try:
        code, out, err = run(capsys, "search", db, "kitchen")
    except KeyboardInterrupt:
        code, err = "a traceback", ""
    assert code == 130 and err == "m3agent search: interrupted\n"


def test_remember_then_search_lines_and_many_queries(tmp_path, capsys):
    db = str(tmp_path / "text.db")
    records = tmp_path / "r.jsonl"
    records.write_text("\n".join([
        json.dumps({"id": "D1:1", "text": "I adopted a puppy named Rex", "speaker": "Ann", "session": "1",
                    "time": "3 June 2023"}),
        "not json",
        json.dumps({"id": "D1:2", "text": "Rex loves the beach", "speaker": "Ben", "session": "1"}),
        json.dumps({"id": "D2:1", "text": "We painted the kitchen blue", "speaker": "Ann", "session": "2"}),
    ]) + "\n")
    hashing = ["--set", "embedder.backend=hashing"]
    code, out, err = run(capsys, *hashing, "remember", db, "--source", "chat", "--jsonl", str(records), "--quiet")
    assert code == 0 and "line 2 skipped: not JSON" in err
    assert json.loads(out) == {"source": "chat", "added": 3, "already_stored": 0, "clips": 2, "skipped_lines": 1}
    code, out, _ = run(capsys, *hashing, "remember", db, "--source", "chat", "--jsonl", str(records), "--quiet")
    assert json.loads(out)["added"] == 0 and json.loads(out)["already_stored"] == 3

    code, out, _ = run(capsys, "search", db, "what is the puppy called", "--video", "chat", "--lines", "2", "--json")
    data = json.loads(out)
    assert code == 0 and data["lines"][0]["id"] == "D1:1" and data["lines"][0]["speaker"] == "Ann"
    assert {"score", "rank_score", "lexical", "time", "session", "clip", "text"} <= set(data["lines"][0])

    queries = tmp_path / "q.txt"
    queries.write_text('kitchen colour\n{"query": "beach", "id": "q-beach"}\n{"nope": 1}\n\n')
    code, out, _ = run(capsys, "search", db, "--queries", str(queries), "--lines", "1")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [r["id"] for r in rows] == [1, "q-beach", 3]
    assert rows[0]["lines"][0]["id"] == "D2:1" and rows[1]["lines"][0]["id"] == "D1:2"
    assert "error" in rows[2] and "lines" not in rows[2]

    lessons = tmp_path / "lessons.jsonl"
    lessons.write_text(json.dumps({"id": "F1", "text": "Give pet names exactly as the user wrote them"}) + "\n")
    code, out, _ = run(capsys, *hashing, "remember", db, "--source", "chat", "--jsonl", str(lessons), "--procedural",
                       "--quiet")
    assert code == 0
    code, out, _ = run(capsys, "search", db, "pet names", "--video", "chat", "--lines", "5", "--json", "--procedural")
    assert [line["id"] for line in json.loads(out)["lines"]] == ["F1"]
    code, out, _ = run(capsys, "search", db, "pet names", "--video", "chat", "--lines", "5", "--json")
    assert "F1" not in [line["id"] for line in json.loads(out)["lines"]]


def test_remember_and_search_refuse_what_they_cannot_use(tmp_path, capsys, db):
    code, _, err = run(capsys, "remember", db, "--source", "x", "--jsonl", str(tmp_path / "none.jsonl"))
    assert code == 2 and "records file not found" in err
    records = tmp_path / "r.jsonl"
    records.write_text(json.dumps({"id": 1, "text": "hello"}) + "\n")
    code, _, err = run(capsys, "remember", db, "--source", "kitchen", "--jsonl", str(records))
    assert code == 2 and "is a video, not a text source" in err
    code, _, err = run(capsys, "search", db)
    assert code == 2 and "give a query" in err
    code, _, err = run(capsys, "search", db, "x", "--lines", "0")
    assert code == 2 and "--lines must be a whole number from 1 to 10,000" in err
    code, _, err = run(capsys, "--set", "memory.search.retrieval=bm42", "search", db, "x")
    assert code == 2 and "memory.search.retrieval must be one of" in err


def test_characters_and_timeline_commands_print_the_views(kitchen, capsys):
    import json

    from m3agent.cli import main

    path = str(kitchen.store.path)
    kitchen.close()
    assert main(["characters", path]) == 0  # views read the DB only: no model loads
    cards = json.loads(capsys.readouterr().out)
    assert [c["name"] for c in cards][:2] == ["Alice", None] and cards[0]["face_crops"] == 1
    assert main(["timeline", path, "--character", "Alice"]) == 0
    clips = json.loads(capsys.readouterr().out)
    assert [c["clip"] for c in clips] == [0, 1, 2] and all(
        "Alice" in ln["text"] or ln["text"].startswith("Equivalence: face_") for c in clips for ln in c["lines"])
    assert main(["timeline", path, "--character", "Zed"]) == 2


# ---------------------------------------------------------------- issue 26: hostile text, numbers and files

HOSTILE = ["\x1b]0;pwned\x07", "\x1b[2J", "\u202e", "\x9b31m"]


def _records_file(tmp_path, rows):
    path = tmp_path / "r.jsonl"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def test_a_lone_surrogate_loses_only_its_own_line(tmp_path, capsys):
    db = str(tmp_path / "text.db")
    path = _records_file(tmp_path, [{"id": "a", "text": "the red kite flew"}, '{"id": "b", "text": "bad \\ud800"}',
                                    {"id": "c", "text": "the blue kite fell"}])
    code, out, err = run(capsys, "--set", "embedder.backend=hashing", "remember", db, "--source", "s", "--jsonl",
                         str(path), "--quiet")
    assert code == 0 and "Traceback" not in err and "line 2 skipped: not JSON (holds a lone surrogate \\ud800" in err
    assert json.loads(out)["added"] == 2
    queries = tmp_path / "q.txt"
    queries.write_text('{"query": "kite \\udc00"}\nkite\n')
    code, out, err = run(capsys, "--set", "embedder.backend=hashing", "search", db, "--queries", str(queries),
                         "--lines", "1")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and "error" in rows[0] and rows[1]["lines"]
    questions = tmp_path / "questions.jsonl"
    questions.write_text('{"question": "Who? \\ud800"}\n')
    assert "questions.jsonl:1: not valid JSON: holds a lone surrogate" in one_line_error(
        capsys, "qa", "qa", db, str(questions), "--out", str(tmp_path / "a.jsonl"))
    assert not (tmp_path / "a.jsonl").exists()


@pytest.mark.parametrize("argv, message", [
    (["--top-k", str(10**20)], "--top-k must be a whole number from 1 to 10,000"),
    (["--lines", str(2**70)], "--lines must be a whole number from 1 to 10,000"),
    (["--threshold", "inf"], "--threshold must be a cosine similarity from -1 to 1 (got inf)"),
    (["--threshold", "nan"], "--threshold must be a cosine similarity from -1 to 1 (got nan)"),
    (["--threshold", "-1.5"], "--threshold must be a cosine similarity"),
    (["--set", f"memory.search.top_k={2**70}"], "memory.search.top_k must be at most"),
])
def test_numbers_no_search_can_use_are_one_line_errors(db, capsys, argv, message):
    options = [a for a in argv if a == "--set" or "=" in a]
    rest = [a for a in argv if a not in options]
    assert message in one_line_error(capsys, "search", *options, "search", db, "kitchen", *rest)


def test_stored_escape_sequences_never_reach_the_terminal(tmp_path, capsys):
    db = str(tmp_path / "text.db")
    rows = [{"id": f"r{i}", "text": f"the kite {h} flew", "speaker": f"Eve{h}", "session": "1"}
            for i, h in enumerate(HOSTILE)]
    hashing = ["--set", "embedder.backend=hashing"]
    assert run(capsys, *hashing, "remember", db, "--source", "s\x1b[2J", "--jsonl", str(_records_file(tmp_path, rows)),
               "--quiet")[0] == 0
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(["Action: [Answer]\nContent: the kite \x1b[2J\u202e flew"]))
    chat = ["--set", "control.chat.backend=scripted", "--set", f"control.chat.model={replies}"]
    outputs = [run(capsys, *hashing, *argv) for argv in (
        ["search", db, "kite", "--threshold", "-1"], ["search", db, "kite", "--lines", "9"],
        ["search", db, "kite", "--lines", "9", "--json"], ["search", db, "kite", "--all-videos"],
        ["timeline", db], ["characters", db], ["export", db], ["inspect", db], [*chat, "ask", db, "kite?"],
        ["search", db, "kite", "--video", "nothing\x1b[2J"])]
    assert [code for code, _, _ in outputs] == [0] * 9 + [2]
    for _, out, err in outputs:
        printed = out + err
        assert not any(c in printed for c in ("\x1b", "\u202e", "\x9b", "\x07")), printed
    assert "\\x1b[2J" in outputs[0][1] and "\\u202e" in outputs[1][1]
    assert any("the kite \x1b[2J flew" in line["text"] for line in json.loads(outputs[2][1])["lines"])  # JSON: exact
