"""M3-Bench annotations (the real robot.json and web.json) + memory DBs -> verl Parquet rows, split by video;
memory-build tasks (a JSON-lines file, or MemoryBench's corpus conversations) -> verl Parquet rows, split by task."""

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from m3agent.cli import main
from m3agent.config import Config
from m3agent.envs.control import ControlEnv
from m3agent.errors import M3AgentError
from m3agent.eval.annotations import read_annotations
from m3agent.factory import open_memory
from m3agent.train.dataset import build_dataset, convert, split_videos
from m3agent.train.tasks import AGENT_NAME, TOOL_NAME, task_of

DATA = Path(__file__).resolve().parents[1] / "data" / "m3bench"
ROBOT = ["living_room_06", "living_room_22", "kitchen_22"]
WEB = ["Efk3K4epEzg", "7F5RQqUJfns"]


@pytest.fixture
def memories(kitchen, db_path, tmp_path):
    """The kitchen memory copied as the memory of a few robot and web videos; the others have none."""
    kitchen.close()
    folder = tmp_path / "memories"
    folder.mkdir()
    for video in ROBOT + WEB:
        shutil.copy(db_path, folder / f"{video}.db")
    return folder


def questions_of(path, videos):
    items = read_annotations(path)
    return items, [i for i in items if i.video in videos]


def test_robot_conversion_rows_skips_and_split(memories, tmp_path):
    items, ours = questions_of(DATA / "robot.json", ROBOT)
    summary = build_dataset(DATA / "robot.json", memories, tmp_path / "out", Config(), val_fraction=0.3, seed=7)
    bad = [i for i in ours if i.problem]
    assert summary["train"] + summary["val"] == len(ours) - len(bad) > 30
    assert summary["skipped"]["no memory"] == len(items) - len(ours)  # 97 videos without a DB
    assert summary["skipped_total"] == len(items) - summary["train"] - summary["val"]
    assert (summary["train_videos"], summary["val_videos"]) == (2, 1)
    train = pq.read_table(tmp_path / "out" / "train.parquet").to_pylist()
    val = pq.read_table(tmp_path / "out" / "val.parquet").to_pylist()
    assert {r["extra_info"]["video_key"] for r in train}.isdisjoint({r["extra_info"]["video_key"] for r in val})
    assert [r["extra_info"]["index"] for r in train] == list(range(len(train)))
    by_id = {i.id: i for i in ours}
    row = train[0]
    item = by_id[row["extra_info"]["question_id"]]
    assert row["data_source"] == "m3-bench/robot" and row["ability"] == "video-memory-qa"
    assert row["agent_name"] == AGENT_NAME and row["reward_model"] == {"style": "rule", "ground_truth": item.reference}
    extra = row["extra_info"]
    assert extra["question"] == item.question and extra["before_clip"] == item.before_clip
    assert extra["video"] == "kitchen"  # the DB's own name for the video
    assert Path(extra["memory"]).is_file() and extra["split"] == "train" and extra["types"] == list(item.types)
    create = extra["tools_kwargs"][TOOL_NAME]["create_kwargs"]
    assert create == {k: extra[k] for k in ("memory", "video", "before_clip", "question")}
    assert [m["role"] for m in row["prompt"]] == ["system", "user"] and item.question in row["prompt"][0]["content"]
    with open_memory(extra["memory"], Config(), readonly=True) as graph:  # the agent loop's first observation
        assert ControlEnv(graph).reset(task_of(extra, item.reference)) == row["prompt"]
    saved = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert saved["train"] == len(train) and saved["problems"][0]["reason"].startswith("no memory for video")


def test_web_conversion_has_no_timestamps_and_a_pickle_is_named(memories, tmp_path):
    (memories / "j1XTIF3moDk.pkl").write_bytes(b"not converted")
    items, ours = questions_of(DATA / "web.json", WEB)
    result = convert(items, memories, Config(), data_source="m3-bench/web", val_fraction=0.0, seed=1)
    assert len(result.train) == len(ours) and not result.val
    assert all(r["extra_info"]["before_clip"] is None for r in result.train)
    pickled = sum(1 for i in items if i.video == "j1XTIF3moDk")
    assert result.skipped["M3-Agent pickle not converted"] == pickled
    assert result.skipped["no memory"] == len(items) - len(ours) - pickled
    assert any("m3agent import-m3" in p["reason"] for p in result.problems)


def test_split_is_by_video_seeded_and_keeps_one_for_training():
    videos = [f"v{i}" for i in range(20)]
    assert split_videos(videos, 0.25, 3) == split_videos(list(reversed(videos)), 0.25, 3)
    assert len(split_videos(videos, 0.25, 3)) == 5
    assert split_videos(videos, 0.25, 3) != split_videos(videos, 0.25, 4)
    assert split_videos(["only"], 0.5, 1) == set() and len(split_videos(["a", "b"], 0.9, 1)) == 1
    assert split_videos(videos, 0.0, 1) == set()


def test_cli_train_data(memories, tmp_path, capsys):
    out = tmp_path / "cli"
    code = main(["train-data", "--annotations", str(DATA / "robot.json"), "--memories", str(memories),
                 "--out", str(out), "--val-fraction", "0.3", "--seed", "7", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and summary["val_videos"] == 1 and (out / "train.parquet").is_file()
    assert main(["train-data", "--annotations", str(DATA / "robot.json"), "--memories", str(tmp_path / "none"),
                 "--out", str(out)]) == 1  # nothing to train on
    assert "skipped: 1276 no memory" in capsys.readouterr().out and not (out / "train.parquet").exists()
    assert main(["train-data", "--annotations", str(DATA / "robot.json"), "--memories", str(memories),
                 "--out", str(out), "--val-fraction", "1.5"]) == 2


def test_memory_shelf_opens_each_db_once_and_shares_embedders(memories):
    from m3agent.train.tasks import MemoryShelf

    shelf = MemoryShelf(Config())
    try:
        first = shelf.get(memories / "living_room_06.db")
        assert shelf.get(str(memories / "living_room_06.db")) is first
        other = shelf.get(memories / "kitchen_22.db")
        assert other is not first and other.embedder_required() is first.embedder_required()
        assert first.store.readonly and first.search("fridge", video="kitchen").clips
    finally:
        shelf.close()


# ------------------------------------------------------------------------------------------------ memory-build
HASHING = ["embedder.backend=hashing", "embedder.model=256"]
MEMORYBENCH = Path(__file__).resolve().parents[1] / "data" / "memorybench"


def memory_tasks():
    """Five tasks: records, clip descriptions, a third good one, one without questions, one repeating an id."""
    questions = [{"question": "Where are the keys?", "answer": "in the blue bowl"}]
    records = [{"id": "1", "text": "I put the keys in the blue bowl.", "speaker": "Ann", "session": "1"},
               {"id": "2", "text": "Thanks, I will find them.", "speaker": "Ben", "session": "1"}]
    return [{"id": "talk", "chunks": records, "questions": questions},
            {"id": "clips", "chunks": ["<face_1> puts the keys in a bowl.", "<face_1> leaves."], "questions": questions},
            {"chunks": ["The keys are in the blue bowl."], "questions": questions},
            {"id": "empty", "chunks": ["nothing asked"], "questions": []},
            {"id": "talk", "chunks": records, "questions": questions}]


def test_memory_build_tasks_become_rows_split_by_task(tmp_path):
    from m3agent.config import load_config
    from m3agent.factory import build_env
    from m3agent.train.dataset import build_task_dataset, read_tasks
    from m3agent.train.tasks import MEMORY_BUILD_AGENT, memory_task_of

    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(t) for t in memory_tasks()) + "\n\n", encoding="utf-8")
    config = load_config(overrides=HASHING)
    summary = build_task_dataset(read_tasks(path), tmp_path / "out", config, data_source="memory-build/tasks",
                                 val_fraction=0.3, seed=3)
    assert (summary["train"], summary["val"], summary["train_questions"] + summary["val_questions"]) == (2, 1, 3)
    assert summary["skipped"] == {"bad task": 1, "repeated id": 1}
    assert {p["task"] for p in summary["problems"]} == {"empty", "talk"}
    train = pq.read_table(tmp_path / "out" / "train.parquet").to_pylist()
    val = pq.read_table(tmp_path / "out" / "val.parquet").to_pylist()
    ids = [r["extra_info"]["task_id"] for r in train + val]
    assert sorted(ids) == ["clips", "talk", "task-3"]  # an id-less task is named by its line
    assert [r["extra_info"]["index"] for r in train] == [0, 1] and val[0]["extra_info"]["split"] == "val"
    env = build_env(config, "memory-build")
    try:
        for row in train + val:
            extra = row["extra_info"]
            assert row["agent_name"] == MEMORY_BUILD_AGENT and extra["env"] == "memory-build"
            assert row["reward_model"] == {"style": "rule", "ground_truth": ""}
            assert row["ability"] == "memory-construction" and row["data_source"] == "memory-build/tasks"
            task = memory_task_of(extra)
            assert task["id"] == extra["task_id"]
            assert env.reset(task) == row["prompt"]  # what the agent loop's env shows first
            assert "Where are the keys" not in json.dumps(row["prompt"])  # held out
    finally:
        env.close()
    (path.parent / "bad.jsonl").write_text('{"id": "a"}\n{oops\n', encoding="utf-8")
    with pytest.raises(M3AgentError, match="line 2"):
        read_tasks(path.parent / "bad.jsonl")


def test_memorybench_corpus_conversations_become_tasks():
    from m3agent.config import load_config
    from m3agent.eval.memorybench.records import load_corpus
    from m3agent.train.dataset import convert_tasks, memorybench_tasks

    notices = []
    (task,) = memorybench_tasks(MEMORYBENCH / "records.jsonl", notice=notices.append)
    assert task["id"] == "memorybench/Locomo-0" and not notices  # NFCats and the others have no corpus
    assert [q["question"] for q in task["questions"]][:2] == ["What is the name of Tom's cat?",
                                                             "Where did Tom run his first half marathon?"]
    assert task["questions"][0] == {"id": "Locomo-0:0", "question": "What is the name of Tom's cat?", "answer": "Pixel"}
    assert len(task["questions"]) == 6
    (turns,) = load_corpus(MEMORYBENCH / "corpus" / "Locomo-0.jsonl").values()
    assert [c["text"] for c in task["chunks"]] == [t["text"] for t in turns]
    assert task["chunks"][0]["speaker"] == "Maya" and task["chunks"][0]["session"] == "1"
    result = convert_tasks([task], load_config(overrides=HASHING), data_source="memorybench/records")
    (row,) = result.train
    assert "Maya: I started pottery classes" in row["prompt"][1]["content"]
    assert memorybench_tasks(MEMORYBENCH) == [task]  # the dataset folder too, its corpus/ inside


def test_cli_train_data_memory_build(tmp_path, capsys):
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(t) for t in memory_tasks()), encoding="utf-8")
    hashing = [w for item in HASHING for w in ("--set", item)]
    out = tmp_path / "mb"
    code = main([*hashing, "train-data", "--task", "memory-build", "--tasks", str(path), "--out", str(out),
                 "--val-fraction", "0.3", "--seed", "3"])
    printed = capsys.readouterr().out
    assert code == 0 and "2 train tasks (2 questions), 1 validation (1 questions)" in printed
    assert "1 bad task, 1 repeated id" in printed and (out / "val.parquet").is_file()
    code = main([*hashing, "train-data", "--task", "memory-build", "--memorybench", str(MEMORYBENCH),
                 "--out", str(tmp_path / "bench"), "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and (summary["train"], summary["train_questions"]) == (1, 6)
    assert pq.read_table(tmp_path / "bench" / "train.parquet").to_pylist()[0]["data_source"] == "memorybench/memorybench"
    for args in (["--task", "memory-build"], ["--task", "memory-build", "--tasks", str(path), "--memorybench", "x"],
                 ["--annotations", str(DATA / "robot.json")],
                 ["--annotations", str(DATA / "robot.json"), "--memories", str(tmp_path), "--tasks", str(path)]):
        assert main(["train-data", *args, "--out", str(tmp_path / "none")]) == 2
    assert "needs --annotations and --memories" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------ the run folder
def cli_tasks(tmp_path, out, *extra):
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(t) for t in memory_tasks()), encoding="utf-8")
    hashing = [w for item in HASHING for w in ("--set", item)]
    return main([*hashing, "train-data", "--task", "memory-build", "--tasks", str(path), "--out", str(out),
                 "--val-fraction", "0.3", "--seed", "3", *extra])


def one_error_line(capsys) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("m3agent train-data: error: "), lines
    return lines[0]


def test_someone_elses_dataset_folder_is_refused_untouched(tmp_path, capsys):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    files = {"train.parquet": b"their rows", "val.parquet": b"their held-out rows", "summary.json": b"{}"}
    for name, data in files.items():
        (theirs / name).write_bytes(data)
    assert cli_tasks(tmp_path, theirs) == 2
    assert "choose another --out" in one_error_line(capsys)
    assert {p.name: p.read_bytes() for p in theirs.iterdir()} == files
    ours = tmp_path / "ours"  # our own folder is ours to write again (the whole set, each file at once)
    assert cli_tasks(tmp_path, ours) == 0 and cli_tasks(tmp_path, ours, "--val-fraction", "0") == 0
    assert not (ours / "val.parquet").exists() and json.loads((ours / "summary.json").read_text())["val"] == 0
    assert sorted(p.name for p in ours.iterdir()) == [".m3agent-run.json", "summary.json", "train.parquet"]


def test_out_onto_a_file_or_under_one_is_one_line(tmp_path, capsys):
    (tmp_path / "file").write_text("data")
    assert cli_tasks(tmp_path, tmp_path / "file") == 2 and "is a file, not a folder" in one_error_line(capsys)
    assert cli_tasks(tmp_path, tmp_path / "file" / "out") == 2
    assert "cannot write into --out" in one_error_line(capsys)
    assert (tmp_path / "file").read_text() == "data"


def test_a_bench_run_folder_is_not_a_dataset_folder(tmp_path, capsys):
    from m3agent.files.outfolder import claim

    claim(tmp_path / "bench", "bench m3", {"annotation questions": "x"})
    assert cli_tasks(tmp_path, tmp_path / "bench") == 2
    assert "holds a run of m3agent bench m3, not of m3agent train-data" in one_error_line(capsys)


def test_before_clip_counts_the_clips_of_the_videos_own_memory(tmp_path, embedder):
    """A memory cut into 10-second clips: a question at 00:45 may see clips 0-3, whatever the configured length."""
    from tests.jobs.test_m3bench import ten_second_memory

    (tmp_path / "memories").mkdir()
    ten_second_memory(tmp_path / "memories" / "short.db", embedder)
    path = tmp_path / "robot.json"
    path.write_text(json.dumps({"short": {"video_path": "videos/short.mp4", "qa_list": [
        {"question": "Who plays guitar?", "answer": "Bob", "question_id": "q1", "timestamp": "00:45"},
        {"question": "Who plays early?", "answer": "Bob", "question_id": "q2", "timestamp": "00:15"}]}}))
    build_dataset(path, tmp_path / "memories", tmp_path / "out", Config(), val_fraction=0.0)
    rows = {r["extra_info"]["question_id"]: r["extra_info"] for r in pq.read_table(tmp_path / "out" / "train.parquet").to_pylist()}
    assert rows["q1"]["before_clip"] == 3 and rows["q1"]["tools_kwargs"][TOOL_NAME]["create_kwargs"]["before_clip"] == 3
    assert rows["q2"]["before_clip"] == 0  # 15 s: clip 0 is over (30-second clips: none yet)
