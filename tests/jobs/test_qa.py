"""`m3agent qa` and `m3agent ask`: question files, resumable answers, JSON shapes, exit codes."""

import json
import os

import pytest

from m3agent.cli import main
from m3agent.config import ControlConfig
from m3agent.control import Controller
from m3agent.jobs.qa import QuestionFileError, load_answers, read_questions, run_qa
from m3agent.models.llm.base import ChatError
from m3agent.models.llm.scripted import ScriptedChat


def write(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_read_questions_accepts_json_lines_and_plain_text(tmp_path):
    path = write(tmp_path / "q.jsonl", [
        json.dumps({"question": "Who opens the fridge?", "question_id": "robot-1", "before_clip": "2",
                    "answer": "Alice", "type": ["Person Understanding"]}),
        "",
        "¿Quién cocina la pasta?",
    ])
    first, second = read_questions(path)
    assert first.id == "robot-1" and first.question.before_clip == 2
    assert first.extra == {"reference": "Alice", "type": ["Person Understanding"]}  # never overwritten
    assert second.id == "q3" and second.question.text == "¿Quién cocina la pasta?"


@pytest.mark.parametrize("line, message", [
    ("{not json", "q.jsonl:1: not valid JSON"),
    (json.dumps({"id": 1}), 'q.jsonl:1: no "question"'),
    (json.dumps({"question": "x", "before_clip": "soon"}), "before_clip must be a clip number"),
])
def test_bad_question_files_name_the_line(tmp_path, line, message):
    with pytest.raises(QuestionFileError, match=message):
        read_questions(write(tmp_path / "q.jsonl", [line]))
    with pytest.raises(QuestionFileError, match="duplicate id"):
        read_questions(write(tmp_path / "d.jsonl", ['{"question": "a", "id": 1}', '{"question": "b", "id": 1}']))


def test_qa_writes_as_it_goes_and_resumes_after_failures_and_torn_lines(tmp_path, kitchen):
    questions = write(tmp_path / "q.jsonl", [json.dumps({"question": f"Who cooks pasta {i}?", "id": f"k{i}"})
                                             for i in range(5)])
    items = read_questions(questions)
    out = tmp_path / "answers.jsonl"

    def flaky(messages):
        if "pasta 3" in messages[0]["content"]:
            raise ChatError("server said 400")
        return f"Action: [Answer]\nContent: <character_{kitchen.ids['alice_face']}>"

    config = ControlConfig(batch_size=2)
    report = run_qa(Controller(kitchen, ScriptedChat(flaky), config), items, out, config)
    assert (report.answered, report.failed, report.skipped) == (4, 1, 0)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in records] == ["k0", "k1", "k2", "k3", "k4"]
    assert records[0]["answer"] == "Alice" and records[0]["rounds"][0]["action"] == "search"
    assert records[3]["error"] == "server said 400"
    with out.open("a") as fh:
        fh.write('{"id": "k9", "answ')  # a crash while writing
    assert set(load_answers(out)) == {"k0", "k1", "k2", "k4"}  # the failure and the torn line are gone
    chat = ScriptedChat(["Action: [Answer]\nContent: Bob"])
    again = run_qa(Controller(kitchen, chat, config), items, out, config)
    assert (again.answered, again.failed, again.skipped) == (1, 0, 4)
    assert len(chat.calls) == 1  # only the failed question was asked again
    assert {json.loads(line)["id"] for line in out.read_text().splitlines()} == {"k0", "k1", "k2", "k3", "k4"}


@pytest.fixture
def scripted_cli(tmp_path, kitchen, db_path):
    """CLI arguments that give the control process a scripted model (replies from a JSON file)."""
    replies = tmp_path / "replies.json"
    alice = kitchen.ids["alice_face"]
    replies.write_text(json.dumps(["Action: [Search]\nContent: who plays guitar on the sofa",
                                   f"Action: [Answer]\nContent: <character_{alice}> opened the fridge"]))
    kitchen.close()
    return str(db_path), ["--set", "control.chat.backend=scripted", "--set", f"control.chat.model={replies}"]


def test_ask_json_and_text(scripted_cli, capsys):
    db, options = scripted_cli
    assert main([*options, "ask", db, "Who opened the fridge?", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"answer", "rounds", "seconds"} <= set(data)
    assert data["answer"] == "Alice opened the fridge"
    assert [r["action"] for r in data["rounds"]] == ["search", "search", "answer"]
    assert all(set(r) == {"action", "content", "clips"} for r in data["rounds"])
    assert main([*options, "ask", db, "Who opened the fridge?", "--before-clip", "0"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Alice opened the fridge") and "seed: search" in text and "round 2: answer" in text


def test_qa_command_and_its_errors(scripted_cli, tmp_path, capsys):
    db, options = scripted_cli
    questions = write(tmp_path / "questions.jsonl", ["Who opened the fridge?", "Who plays guitar?"])
    assert main([*options, "qa", db, str(questions), "--quiet"]) == 0
    assert "2 answered, 0 failed" in capsys.readouterr().out
    answers = tmp_path / "questions.answers.jsonl"
    assert sorted(json.loads(line)["id"] for line in answers.read_text().splitlines()) == ["q1", "q2"]
    assert main([*options, "qa", db, str(questions), "--quiet"]) == 0
    assert "2 already done" in capsys.readouterr().out
    bad = write(tmp_path / "bad.jsonl", ["{oops"])
    assert main([*options, "qa", db, str(bad)]) == 2
    assert "bad.jsonl:1" in capsys.readouterr().err
    assert main(["--set", "control.chat.backend=openai", "--set", "control.chat.api_key_env=M3_NO_SUCH_KEY",
                 "ask", db, "Who?"]) == 2
    assert "base_url" in capsys.readouterr().err


# ---------------------------------------------------------------- never destroy input, never lose work

def answered(path):
    return [json.loads(line)["id"] for line in path.read_text().splitlines()]


def test_out_is_never_the_questions_file(scripted_cli, tmp_path, capsys, monkeypatch):
    db, options = scripted_cli
    questions = write(tmp_path / "questions.jsonl", ["Who opened the fridge?", "Who plays guitar?"])
    before = questions.read_bytes()
    (tmp_path / "link.jsonl").symlink_to(questions)
    os.link(questions, tmp_path / "hard.jsonl")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    for out in (str(questions), "questions.jsonl", "./sub/../questions.jsonl", "link.jsonl", "hard.jsonl"):
        assert main([*options, "qa", db, str(questions), "--out", out, "--quiet"]) == 2, out
        err = capsys.readouterr().err
        assert err.startswith("m3agent qa: error: ") and "is the questions file" in err and err.count("\n") == 1
        assert questions.read_bytes() == before


FOREIGN = {
    "text": "my notes\nsecond line\n",
    "no newline": "a single line with no newline",
    "json lines of something else": '{"name": "x"}\n{"name": "y"}\n',
    "questions with their true answers": '{"id": "q1", "question": "Who?", "answer": "Alice"}\n',
    "answers then a foreign line": ('{"id": "q1", "question": "Who opened the fridge?", "answer": "A", "rounds": []}\n'
                                    "hand-written note\n"),
    "binary": "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
}


@pytest.mark.parametrize("kind", FOREIGN)
def test_out_that_qa_did_not_write_is_refused_and_left_alone(scripted_cli, tmp_path, capsys, kind):
    db, options = scripted_cli
    questions = write(tmp_path / "questions.jsonl", ["Who opened the fridge?"])
    out = tmp_path / "precious.txt"
    out.write_bytes(FOREIGN[kind].encode("latin-1"))
    before = out.read_bytes()
    assert main([*options, "qa", db, str(questions), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("m3agent qa: error: ") and "precious.txt" in err and err.count("\n") == 1
    assert out.read_bytes() == before


def test_an_empty_out_file_is_used_and_a_torn_last_line_dropped(scripted_cli, tmp_path, capsys):
    db, options = scripted_cli
    questions = write(tmp_path / "questions.jsonl", ["Who opened the fridge?", "Who plays guitar?"])
    out = tmp_path / "answers.jsonl"
    out.write_text("")
    assert main([*options, "qa", db, str(questions), "--out", str(out), "--quiet"]) == 0
    assert sorted(answered(out)) == ["q1", "q2"]  # in the order they finished
    lines = out.read_text().splitlines()
    out.write_text(lines[0] + "\n" + lines[1][:40])  # killed while writing the second answer
    assert main([*options, "qa", db, str(questions), "--out", str(out), "--quiet"]) == 0
    assert "1 answered, 0 failed, 1 already done" in capsys.readouterr().out
    assert sorted(answered(out)) == ["q1", "q2"]


def test_out_holding_answers_to_other_questions_is_refused(scripted_cli, tmp_path, capsys):
    db, options = scripted_cli
    out = tmp_path / "answers.jsonl"
    first = write(tmp_path / "first.txt", ["Who opened the fridge?"])
    assert main([*options, "qa", db, str(first), "--out", str(out), "--quiet"]) == 0
    before = out.read_bytes()
    other = write(tmp_path / "other.txt", ["Who plays guitar?"])  # also "q1": its answer must not be skipped
    assert main([*options, "qa", db, str(other), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "'q1'" in err and "another question" in err and out.read_bytes() == before


def interrupting(kitchen):
    """Replies that answer every question in round 1 except "pasta 3", which searches, then Ctrl-C."""
    def reply(messages):
        if "pasta 3" in messages[0]["content"]:
            if len(messages) > 2:
                raise KeyboardInterrupt
            return "Action: [Search]\nContent: pasta"
        return f"Action: [Answer]\nContent: <character_{kitchen.ids['bob_face']}>"
    return ScriptedChat(reply)


def test_ctrl_c_mid_batch_keeps_every_finished_answer(tmp_path, kitchen):
    items = read_questions(write(tmp_path / "q.jsonl", [f"Who cooks pasta {i}?" for i in range(5)]))
    out = tmp_path / "answers.jsonl"
    config = ControlConfig(batch_size=4)
    with pytest.raises(KeyboardInterrupt) as info:
        run_qa(Controller(kitchen, interrupting(kitchen), config), items, out, config)
    assert answered(out) == ["q1", "q2", "q3"]  # answered in round 1 of the group in flight
    assert info.value.report.answered == 3
    chat = ScriptedChat(["Action: [Answer]\nContent: Bob"])
    again = run_qa(Controller(kitchen, chat, config), items, out, config)
    assert (again.answered, again.skipped) == (2, 3) and sorted(answered(out)) == ["q1", "q2", "q3", "q4", "q5"]


def test_ctrl_c_in_the_cli_says_what_is_saved(scripted_cli, kitchen, tmp_path, capsys, monkeypatch):
    db, options = scripted_cli
    import m3agent.factory

    monkeypatch.setattr(m3agent.factory, "build_chat", lambda config: interrupting(kitchen))
    questions = write(tmp_path / "q.txt", [f"Who cooks pasta {i}?" for i in range(5)])
    out = tmp_path / "q.answers.jsonl"
    try:
        code = main([*options, "qa", db, str(questions), "--batch", "4", "--quiet"])
    except KeyboardInterrupt:
        code = "a traceback"
    assert code == 130
    err = capsys.readouterr().err
    assert err == f"interrupted: 3 answers saved in {out}; run the same command to resume\n"
    assert answered(out) == ["q1", "q2", "q3"]


# ---------------------------------------------------------------- questions files of every kind

def test_question_file_encodings(tmp_path):
    bom = tmp_path / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbf" + '{"question": "Où est Zoë?", "id": "a"}\nWho?\n'.encode())
    first, second = read_questions(bom)
    assert (first.id, first.question.text, second.question.text) == ("a", "Où est Zoë?", "Who?")
    utf16 = tmp_path / "utf16.txt"
    utf16.write_text("Où est Zoë?\r\nWho?\r\n", encoding="utf-16")  # Notepad's "Unicode"
    assert [i.question.text for i in read_questions(utf16)] == ["Où est Zoë?", "Who?"]
    separator = tmp_path / "sep.jsonl"  # JSON keeps U+2028 raw in strings: it is no line break
    separator.write_text(json.dumps({"question": "a\u2028b"}, ensure_ascii=False) + "\n", encoding="utf-8")
    assert read_questions(separator)[0].question.text == "a\u2028b"


@pytest.mark.parametrize("data, message", [
    ("Who?\nOù est Zoë?\n".encode("latin-1"), "latin.txt:2: not UTF-8 text"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "latin.txt:3: NUL byte: not a text file"),
    (b"Who?\nWhere\x00\x00\x00?\n", "latin.txt:2: NUL byte"),
    (bytes(range(256)) * 4, "latin.txt:1: NUL byte"),
    (b"Who?\n\xff\xfe\xfd garbage", "latin.txt:2: not UTF-8 text"),
])
def test_question_files_that_are_not_text_are_clear_errors(tmp_path, data, message):
    path = tmp_path / "latin.txt"
    path.write_bytes(data)
    with pytest.raises(QuestionFileError, match=message):
        read_questions(path)


def test_missing_or_unreadable_questions_file(scripted_cli, tmp_path, capsys):
    db, options = scripted_cli
    for path in (tmp_path / "missing.jsonl", tmp_path):
        assert main([*options, "qa", db, str(path)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"m3agent qa: error: cannot read {path}") and err.count("\n") == 1


@pytest.mark.parametrize("text, value", [("1e400", "inf"), ("1.5", "1.5"), ("true", "True"), ('"x"', "'x'"),
                                         ("-1", "-1"), ('"-2"', "'-2'"), ("NaN", "nan"), ("[1]", r"\[1\]")])
def test_before_clip_must_be_a_clip_number(tmp_path, text, value):
    path = tmp_path / "q.jsonl"
    path.write_text('{"question": "fine"}\n{"question": "Who?", "before_clip": ' + text + "}\n")
    with pytest.raises(QuestionFileError, match=rf"q.jsonl:2: before_clip must be a clip number >= 0 \(got {value}\)"):
        read_questions(path)


def test_before_clip_accepts_whole_numbers_and_reads_huge_ones_as_no_cut_off(tmp_path):
    path = write(tmp_path / "q.jsonl", [json.dumps({"question": "Who?", "id": n, "before_clip": v})
                                        for n, v in enumerate([3, "4", 5.0, 0, 10**30, None])])
    assert [i.question.before_clip for i in read_questions(path)] == [3, 4, 5, 0, None, None]
