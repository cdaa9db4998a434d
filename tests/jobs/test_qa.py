"""`m3agent qa` and `m3agent ask`: question files, resumable answers, JSON shapes, exit codes."""

import json

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
    assert first.extra == {"answer": "Alice", "type": ["Person Understanding"]}
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
    assert [json.loads(line)["id"] for line in answers.read_text().splitlines()] == ["q1", "q2"]
    assert main([*options, "qa", db, str(questions), "--quiet"]) == 0
    assert "2 already done" in capsys.readouterr().out
    bad = write(tmp_path / "bad.jsonl", ["{oops"])
    assert main([*options, "qa", db, str(bad)]) == 2
    assert "bad.jsonl:1" in capsys.readouterr().err
    assert main(["--set", "control.chat.backend=openai", "--set", "control.chat.api_key_env=M3_NO_SUCH_KEY",
                 "ask", db, "Who?"]) == 2
    assert "base_url" in capsys.readouterr().err
