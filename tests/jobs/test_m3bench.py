"""`m3agent bench m3`: answers, verdicts and reasons for every question; resume after a kill; the report."""

import dataclasses
import json
import sys

import pytest

from m3agent.cli import main
from m3agent.config import BenchConfig, Config, ControlConfig, JudgeConfig
from m3agent.eval.annotations import read_annotations
from m3agent.eval.judge import ChatJudge, OfflineJudge
from m3agent.files.outfolder import MARKER, OutFolderError, fingerprint
from m3agent.jobs.m3bench import BenchInterrupted, BenchSetup, load_results, run_bench
from m3agent.models.llm.base import ChatError
from m3agent.models.llm.scripted import ScriptedChat
from tests.data import M3BENCH
from tests.memory.test_m3_import import m3, m3_pickle  # noqa: F401  (fixtures)

QUESTIONS = [("Who plays guitar on the sofa?", "Bob", ["Person Understanding"], "02:00"),
             ("Who cooks pasta in the kitchen?", "Bob", ["Cross-Modal Reasoning", "Multi-Hop Reasoning"], "02:00"),
             ("Is the fridge full?", "No, it is empty.", ["Multi-Detail Reasoning"], "01:40"),
             ("What does Alice water on the balcony?", "The plants.", ["General Knowledge Extraction"], "01:40")]


@pytest.fixture
def db_path(tmp_path):  # the kitchen fixture's memory, where the bench looks for video "kitchen"
    (tmp_path / "memories").mkdir()
    return tmp_path / "memories" / "kitchen.db"


def annotations(tmp_path, videos=("kitchen",), questions=QUESTIONS):
    data = {video: {"video_path": f"data/videos/{video}.mp4", "mem_path": f"data/memory_graphs/{video}.pkl",
                    "qa_list": [{"question": q, "answer": a, "question_id": f"{video}_Q{i:02d}", "reasoning": "",
                                 "timestamp": t, "type": types, "before_clip": 0}
                                for i, (q, a, types, t) in enumerate(questions, 1)]}
            for video in videos}
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(data))
    (tmp_path / "bench.evidence.json").write_text(json.dumps({"kitchen_Q01": [1], "kitchen_Q02": [3]}))
    return path


def replies(messages):
    """A control model that answers from the question: right for two, wrong for two."""
    question = messages[-1]["content"]
    answer = {"guitar": "Bob plays the guitar.", "pasta": "Bob cooks it.", "fridge": "It is full of milk.",
              "water": "I do not know."}
    return "Action: [Answer]\nContent: " + next(v for k, v in answer.items() if k in question)


def setup_for(tmp_path, chat=None, judge=None, config=None, quote=False, **kw):
    """The bench's setup with a scripted control model; its answers are kept as it gives them unless ``quote``
    (``control.quote_invented``, on by default in real use, gives a note for an answer mostly invented)."""
    config = config or Config(control=ControlConfig(batch_size=2))
    config = dataclasses.replace(config, control=dataclasses.replace(config.control, quote_invented=quote))
    chat = chat or ScriptedChat(replies)
    judge = judge or OfflineJudge(f1=0.5)
    return BenchSetup(memories=tmp_path / "memories", out=tmp_path / "out", config=config, chat=lambda: chat,
                      judge=lambda: judge, judge_label=judge.label, **kw), chat


def test_answers_judged_and_reported(tmp_path, kitchen):
    setup, chat = setup_for(tmp_path)
    summary = run_bench(read_annotations(annotations(tmp_path)), setup)
    records = load_results(tmp_path / "out")
    assert [records[k]["verdict"]["correct"] for k in sorted(records)] == [True, True, False, False]
    first = records["kitchen_Q01"]
    assert first["types"] == ["Person Understanding"] and first["reference"] == "Bob"
    assert first["before_clip"] == 3 and first["clips"] and first["model_rounds"] == 1
    assert {"rounds", "seconds", "tokens", "answer", "error"} <= first.keys()
    assert first["unfound"] == ["bob"]  # right, yet no note names him: this scripted model knows more than memory
    assert records["kitchen_Q03"]["unfound"] == ["milk"]  # "full of milk" was superseded: no note shown says it
    assert records["kitchen_Q03"]["types"] == ["Multi-Evidence Reasoning"]
    assert summary.overall.correct == 2 and summary.overall.total == 4
    assert summary.by_type["Multi-Hop Reasoning"].correct == 1 and summary.by_video["kitchen"].total == 4
    assert summary.evidence["known"] == 2 and summary.seconds["p50"] >= 0 and summary.rounds["mean"] == 1
    report = (tmp_path / "out" / "report.md").read_text()
    assert "**Accuracy: 50.0% (2/4)**" in report and "| Multi-Hop Reasoning | 100.0% | 1 | 1 | 1 |" in report
    assert summary.grounding["checked"] == 4 and summary.grounding["wrong"] == 2
    assert f"of the 2 wrong answers, invented {summary.grounding['wrong_invented']}," in report
    assert (tmp_path / "out" / "accuracy_by_type.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["overall"]["accuracy"] == 0.5

    calls = len(chat.calls)  # a second run asks nothing again
    run_bench(read_annotations(annotations(tmp_path)), setup)
    assert len(chat.calls) == calls


def test_resume_after_a_kill_asks_only_what_is_missing(tmp_path, kitchen):
    asked = []

    def killed_after_two(messages):
        asked.append(messages[-1]["content"])
        if len(asked) == 3:
            raise KeyboardInterrupt
        return replies(messages)

    setup, _ = setup_for(tmp_path, chat=ScriptedChat(killed_after_two), config=Config(control=ControlConfig(batch_size=1)))
    with pytest.raises(BenchInterrupted) as stop:
        run_bench(read_annotations(annotations(tmp_path)), setup)
    assert stop.value.saved == 2 and len(load_results(tmp_path / "out")) == 2
    setup, chat = setup_for(tmp_path)
    summary = run_bench(read_annotations(annotations(tmp_path)), setup)
    assert summary.overall.total == 4 and summary.overall.answered == 4
    assert len(chat.calls) == 2  # only the two questions the killed run never finished


def test_each_question_gets_its_reason_and_the_run_goes_on(tmp_path, kitchen):
    (tmp_path / "memories" / "broken.db").write_bytes(b"this is no SQLite file" * 100)
    path = annotations(tmp_path, videos=("kitchen", "broken", "absent"))
    setup, _ = setup_for(tmp_path, videos=tmp_path / "no-videos-here")
    (tmp_path / "no-videos-here").mkdir()
    summary = run_bench(read_annotations(path), setup)
    records = load_results(tmp_path / "out")
    assert len(records) == 12 and summary.overall.total == 12
    assert "cannot open the memory" in records["broken_Q01"]["error"] and records["broken_Q01"]["stage"] == "memory"
    absent = records["absent_Q01"]["error"]
    assert "no memory for video 'absent'" in absent and "no video file in" in absent
    assert summary.failures["memory"]["count"] == 8 and summary.by_video["kitchen"].correct == 2


def test_a_failing_control_model_and_a_silent_judge(tmp_path, kitchen):
    def flaky(messages):
        if "pasta" in messages[-1]["content"]:
            raise ChatError("control server said 500")
        return replies(messages)

    silent = ChatJudge(JudgeConfig(backend="chat"), chat=ScriptedChat([ChatError("judge unreachable")], retries=0))
    setup, _ = setup_for(tmp_path, chat=ScriptedChat(flaky, retries=0), judge=silent)
    summary = run_bench(read_annotations(annotations(tmp_path)), setup)
    records = load_results(tmp_path / "out")
    assert records["kitchen_Q02"]["stage"] == "answer" and "500" in records["kitchen_Q02"]["error"]
    unjudged = records["kitchen_Q01"]
    assert unjudged["answer"] and unjudged["verdict"]["correct"] is None and "unreachable" in unjudged["verdict"]["reason"]
    assert summary.overall.correct == 0 and summary.unjudged == 3  # never counted as right

    control = ScriptedChat(replies)  # a re-run with a judge that works judges again without asking again
    setup, _ = setup_for(tmp_path, chat=control, judge=silent.__class__(JudgeConfig(backend="chat"),
                                                                         chat=ScriptedChat(["Yes"])))
    summary = run_bench(read_annotations(annotations(tmp_path)), setup)
    assert summary.overall.correct == 4 and summary.unjudged == 0
    assert len(control.calls) == 1  # only the failed question was asked again


def test_an_m3_agent_pickle_is_converted_once(tmp_path, m3_pickle, monkeypatch):  # noqa: F811
    memories = tmp_path / "memories"
    memories.mkdir(exist_ok=True)
    m3_pickle.rename(memories / "kitchen.pkl")
    monkeypatch.delitem(sys.modules, "mmagent.videograph")
    questions = [("Who leaves the room?", "Eve", ["Person Understanding"], "01:00")]
    config = Config(control=ControlConfig(batch_size=2))
    config = Config(control=config.control, embedder=config.embedder.__class__(backend="hashing", model="512"))
    setup, _ = setup_for(tmp_path, chat=ScriptedChat(["Action: [Answer]\nContent: Eve leaves."]), config=config)
    summary = run_bench(read_annotations(annotations(tmp_path, questions=questions)), setup)
    assert summary.overall.correct == 1
    marker = json.loads((tmp_path / "out" / "converted" / "kitchen.db.imported.json").read_text())
    assert marker["clips"] == 2 and marker["pickle"].endswith("kitchen.pkl")


def test_multiple_choice_is_scored_by_letter(tmp_path, kitchen):
    path = tmp_path / "mc.json"
    path.write_text(json.dumps([
        {"videoID": "kitchen", "question_id": "mc1", "task_type": "Action Recognition", "question": "What does Bob play?",
         "options": ["A. Piano.", "B. Guitar.", "C. Drums.", "D. Violin."], "answer": "B"},
        {"videoID": "kitchen", "question_id": "mc2", "task_type": "Action Recognition", "question": "Who waters plants?",
         "options": ["A. Alice.", "B. Bob."], "answer": "A"}]))
    chat = ScriptedChat(lambda m: "Action: [Answer]\nContent: " + ("B. Guitar." if "play" in m[-1]["content"] else "Bob"))
    setup, _ = setup_for(tmp_path, chat=chat, judge=ChatJudge(JudgeConfig(backend="chat"), chat=ScriptedChat([ChatError("unused")])))
    summary = run_bench(read_annotations(path), setup)
    assert summary.overall.correct == 1 and "no judge model" in summary.judge
    assert "Options:\nA. Piano." in chat.calls[0][-1]["content"]
    assert load_results(tmp_path / "out")["mc1"]["verdict"]["reply"] == "B"


def test_whole_web_json_with_no_memories_accounts_for_every_question(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    code = main(["bench", "m3", "--annotations", str(M3BENCH / "web.json"), "--memories", str(tmp_path / "empty"),
                 "--out", str(tmp_path / "out"), "--quiet"])
    assert code == 0 and "(0/3214)" in capsys.readouterr().out
    records = load_results(tmp_path / "out")
    assert len(records) == 3214 and all(r["stage"] == "memory" and "no memory for video" in r["error"]
                                        for r in records.values())
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| memory | 3214 |" in report and (tmp_path / "out" / "accuracy_by_type.png").exists()


def test_cli_bench_refuses_bad_arguments(tmp_path, capsys):
    path = annotations(tmp_path)
    assert main(["bench", "m3", "--annotations", str(path), "--memories", str(tmp_path / "nope"),
                 "--out", str(tmp_path / "out")]) == 2
    assert "--memories" in capsys.readouterr().err
    (tmp_path / "memories").mkdir()
    assert main(["bench", "m3", "--annotations", str(path), "--memories", str(tmp_path / "memories"),
                 "--out", str(tmp_path / "out"), "--limit", "0"]) == 2
    assert main(["--set", "bench.judge.backend=oracle", "bench", "m3", "--annotations", str(path), "--memories",
                 str(tmp_path / "memories"), "--out", str(tmp_path / "out")]) == 2
    assert "unknown judge backend 'oracle'" in capsys.readouterr().err


def test_videos_answered_at_once_share_the_control_model(tmp_path, kitchen):
    kitchen.close()
    import shutil

    shutil.copy(tmp_path / "memories" / "kitchen.db", tmp_path / "memories" / "kitchen2.db")
    config = Config(control=ControlConfig(batch_size=2), bench=BenchConfig(workers=2))
    setup, chat = setup_for(tmp_path, config=config)
    summary = run_bench(read_annotations(annotations(tmp_path, videos=("kitchen", "kitchen2"))), setup)
    assert summary.overall.total == 8 and summary.overall.correct == 4 and len(chat.calls) == 8
    assert summary.by_video["kitchen2"].correct == 2


def test_feedback_is_kept_as_procedural_memory_and_helps_later_questions(tmp_path, kitchen, db_path):
    from m3agent.jobs.m3bench_feedback import run_feedback_bench
    from m3agent.memory import MemoryGraph

    kitchen.close()
    asked = [("Is the fridge full?", "No, it is empty.", ["Multi-Detail Reasoning"], "01:40"),
             ("Who plays guitar on the sofa?", "Bob", ["Person Understanding"], "01:40"),
             ("Is the fridge full now?", "No, it is empty.", ["Multi-Detail Reasoning"], "02:00")]

    def model(messages):
        """Wrong about the fridge unless a lesson in its prompt carries the user's correction."""
        system = messages[0]["content"]
        if "guitar" in messages[-1]["content"]:
            return "Action: [Answer]\nContent: Bob plays it."
        if "corrected it:" in system:
            return "Action: [Answer]\nContent: " + system.split("corrected it: ")[1].split('"')[1]
        return "Action: [Answer]\nContent: It is full of milk."

    setup, chat = setup_for(tmp_path, chat=ScriptedChat(model))
    items = read_annotations(annotations(tmp_path, questions=asked))
    result = run_feedback_bench(items, setup, benchmark="kitchen", correction_rate=1.0)
    assert result["later questions"]["without"]["correct"] == 1  # guitar only
    assert result["later questions"]["with"]["correct"] == 2  # and the fridge, corrected before
    assert result["lessons stored"] == 3 and result["corrections"] == 1
    assert "| later questions (2) | 1/2 = 0.5 | 2/2 = 1.0 |" in (tmp_path / "out" / "feedback.md").read_text()
    # asked again with every lesson in memory: the first fridge question too now, from its own correction
    assert result["asked again"] == {"without": {"questions": 3, "correct": 1, "accuracy": 0.3333},
                                     "with": {"questions": 3, "correct": 3, "accuracy": 1.0}}
    assert "| asked again (3) | 1/3 = 0.3333 | 3/3 = 1.0 |" in (tmp_path / "out" / "feedback.md").read_text()
    again_records = load_results(tmp_path / "out" / "again")
    assert all("feedback" not in r for r in again_records.values()) and len(again_records) == 3
    with MemoryGraph.open(tmp_path / "out" / "with" / "memories" / "kitchen.db", readonly=True) as graph:
        assert graph.store.counts()["nodes"]["procedural"] == 3
    with MemoryGraph.open(db_path, readonly=True) as original:
        assert original.store.counts()["nodes"]["procedural"] == 0  # the benchmark's memory is not written

    calls = len(chat.calls)  # every pass resumes: nothing is asked again
    rerun = run_feedback_bench(items, setup, benchmark="kitchen", correction_rate=1.0)
    assert len(chat.calls) == calls and rerun == result


# ------------------------------------------------------------------------------------------------ the run folder
BOB = [("Who plays guitar on the sofa?", "Bob", ["Person Understanding"], "02:00"),
       ("Who cooks pasta in the kitchen?", "Bob", ["Person Understanding"], "02:00"),
       ("Who is the musician?", "Bob", ["Person Understanding"], "02:00")]


def test_an_invented_answer_is_given_as_the_nearest_note_and_counted_apart(tmp_path, kitchen):
    setup, _ = setup_for(tmp_path, quote=True)
    summary = run_bench(read_annotations(annotations(tmp_path)), setup)
    water = load_results(tmp_path / "out")["kitchen_Q04"]  # this model reads "fridge" in the results: milk, invented
    assert water["quoted"] == "It is full of milk." and water["rounds"][-1]["replaced_by"] == "quote"
    assert water["answer"] == "Alice waters the plants on the balcony" and water["verdict"]["correct"]
    assert water["unfound"] == []  # the answer given is a note
    assert summary.grounding["quoted"] == 1 and summary.grounding["quoted_right"] == 1
    assert "Quoted: 1 of the answers given are the note nearest the question" in (tmp_path / "out" / "report.md").read_text()


def annotation_file(tmp_path, name, questions):
    return annotations(tmp_path, questions=questions).rename(tmp_path / name)


def cli_bench(tmp_path, path, out="out", *extra):
    """``bench m3`` through the CLI with a control model that always says Bob (no model loads; no note names him, so
    the rule that quotes a note for an invented answer is off)."""
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(["Action: [Answer]\nContent: Bob."]))
    return main(["--set", "embedder.backend=hashing", "--set", "embedder.model=512", "--set",
                 "control.chat.backend=scripted", "--set", f"control.chat.model={replies}",
                 "--set", "control.quote_invented=false", "bench", "m3",
                 "--annotations", str(path), "--memories", str(tmp_path / "memories"), "--out", str(tmp_path / out),
                 "--quiet", *extra])


def one_error_line(capsys, command="bench") -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"m3agent {command}: error: "), lines
    return lines[0]


def test_someone_elses_report_is_never_overwritten(tmp_path, kitchen, capsys):
    from m3agent.jobs.m3bench_feedback import run_feedback_bench

    theirs = {"report.md": "# my report\n", "summary.json": '{"mine": true}\n', "accuracy_by_type.png": "png"}
    (tmp_path / "out").mkdir()
    for name, text in theirs.items():
        (tmp_path / "out" / name).write_text(text)
    assert cli_bench(tmp_path, annotation_file(tmp_path, "a.json", BOB)) == 2
    assert "choose another --out" in one_error_line(capsys)
    assert {p.name: p.read_text() for p in (tmp_path / "out").iterdir()} == theirs  # untouched, nothing added
    setup, _ = setup_for(tmp_path)
    (tmp_path / "out" / "feedback.md").write_text("their comparison")
    with pytest.raises(OutFolderError, match="holds files of no m3agent bench m3 --feedback run"):
        run_feedback_bench(read_annotations(annotations(tmp_path)), setup, benchmark="kitchen")
    assert (tmp_path / "out" / "feedback.md").read_text() == "their comparison"
    assert not (tmp_path / "out" / "without").exists()


def test_a_run_folder_belongs_to_one_annotation_file(tmp_path, kitchen, capsys):
    first = annotation_file(tmp_path, "first.json", BOB)
    assert cli_bench(tmp_path, first) == 0 and "accuracy 100.0% (3/3)" in capsys.readouterr().out
    report = (tmp_path / "out" / "report.md").read_text()
    other = [(q, ref, types, t) for (q, _, types, t), ref in zip(BOB, ["Alice", "Alice", "Bob"])]
    second = annotation_file(tmp_path, "second.json", other)  # the same question ids, other questions
    assert cli_bench(tmp_path, second) == 2  # the earlier answers would score 100%
    assert "made with other annotation questions;" in one_error_line(capsys)
    assert (tmp_path / "out" / "report.md").read_text() == report
    assert cli_bench(tmp_path, second, "fresh") == 0 and "accuracy 33.3% (1/3)" in capsys.readouterr().out
    assert cli_bench(tmp_path, first, "out", "--limit", "2") == 0  # the same file: resumed, a part of it
    assert "accuracy 100.0% (2/2)" in capsys.readouterr().out


def test_the_same_questions_resume_and_other_settings_are_refused(tmp_path, kitchen):
    items = read_annotations(annotations(tmp_path))
    setup, chat = setup_for(tmp_path)
    setup.questions = fingerprint(items)  # the whole file, as the CLI says it
    run_bench(items[:2], setup)  # --limit 2
    run_bench(items, setup)
    assert len(chat.calls) == 4  # two, then the other two
    (tmp_path / "out" / MARKER).unlink()  # a folder of an older version: our files only, adopted
    run_bench(items, setup)
    assert len(chat.calls) == 4 and (tmp_path / "out" / MARKER).is_file()
    other = Config(control=ControlConfig(batch_size=2, max_rounds=3))
    setup, chat = setup_for(tmp_path, config=other)
    with pytest.raises(OutFolderError, match="made with other control.max_rounds;"):
        run_bench(items, setup)
    assert chat.calls == []


def test_out_onto_a_file_or_under_one_is_one_line(tmp_path, kitchen, capsys):
    path = annotation_file(tmp_path, "a.json", BOB)
    (tmp_path / "file").write_text("data")
    assert cli_bench(tmp_path, path, "file") == 2 and "is a file, not a folder" in one_error_line(capsys)
    assert cli_bench(tmp_path, path, "file/out") == 2 and "cannot write into --out" in one_error_line(capsys)
    assert (tmp_path / "file").read_text() == "data"


def ten_second_memory(path, embedder, name="short"):
    """A video memorized in 10-second clips (not the configured 30): clip k covers seconds 10k to 10k + 10."""
    from m3agent.memory import MemoryGraph

    with MemoryGraph.open(path, embedder=embedder) as graph:
        video = graph.add_video(name, duration=60.0, clip_seconds=10.0)
        for clip in range(6):
            with graph.clip(video, clip, 10.0 * clip, 10.0 * clip + 10) as batch:
                batch.episodic(f"In second {10 * clip} Bob plays guitar on the sofa")


def test_before_clip_counts_the_clips_of_the_videos_own_memory(tmp_path, embedder):
    """The annotation's time becomes a clip number in the memory's own clip length, not the configured one."""
    (tmp_path / "memories").mkdir()
    ten_second_memory(tmp_path / "memories" / "short.db", embedder)
    questions = [("Who plays guitar on the sofa?", "Bob", ["Person Understanding"], "00:45"),
                 ("Who plays guitar early on?", "Bob", ["Person Understanding"], "00:15")]
    config = Config(control=ControlConfig(batch_size=2))
    config = Config(control=config.control, embedder=config.embedder.__class__(backend="hashing", model="512"))
    setup, chat = setup_for(tmp_path, chat=ScriptedChat(lambda m: "Action: [Answer]\nContent: Bob"), config=config)
    run_bench(read_annotations(annotations(tmp_path, videos=("short",), questions=questions)), setup)
    records = load_results(tmp_path / "out")
    assert records["short_Q01"]["before_clip"] == 3  # 45 s: clips 0-3 are over (30-second clips: only clip 0)
    assert set(records["short_Q01"]["clips"]) <= {0, 1, 2, 3}
    assert records["short_Q02"]["before_clip"] == 0 and not records["short_Q02"]["error"]  # 15 s: clip 0 is over


def test_a_report_names_the_control_models_adapter_where_one_is_applied():
    from m3agent.config import ChatConfig
    from m3agent.jobs.m3bench import adapter_label

    assert adapter_label(ChatConfig(adapter="bundled")) == " + the shipped control adapter"
    assert adapter_label(ChatConfig(adapter="run/adapter.gguf")) == " + adapter run/adapter.gguf"
    assert adapter_label(ChatConfig()) == ""  # the untrained model
    assert adapter_label(ChatConfig(backend="openai", adapter="bundled")) == ""  # a server's model: none applied
    assert adapter_label(ChatConfig(model="/m/other.gguf", adapter="bundled")) == ""  # another base: none applied


def test_a_run_folder_belongs_to_the_adapter_files_content_not_only_its_setting(tmp_path):
    from m3agent.config import ChatConfig
    from m3agent.jobs.m3bench import adapter_identity

    adapter = tmp_path / "adapter.gguf"
    adapter.write_bytes(b"lora weights, first training")
    first = adapter_identity(ChatConfig(backend="llamacpp", adapter=str(adapter)))
    adapter.write_bytes(b"lora weights, trained again")  # a newly shipped adapter under the same setting
    assert first and adapter_identity(ChatConfig(backend="llamacpp", adapter=str(adapter))) != first
    peft = tmp_path / "peft"
    peft.mkdir()
    (peft / "adapter_model.safetensors").write_bytes(b"tensors")
    assert adapter_identity(ChatConfig(backend="transformers", adapter=str(peft)))
    assert adapter_identity(ChatConfig(backend="llamacpp", adapter="bundled"))  # the shipped one, by content
    assert adapter_identity(ChatConfig(backend="llamacpp")) == ""  # the untrained model
    assert adapter_identity(ChatConfig(backend="openai", adapter="bundled")) == ""  # a server's model: none applied
