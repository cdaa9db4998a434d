"""``m3agent train worlds`` and ``m3agent train control``: the command's checks, its tasks, its curve."""

import json

import pytest

from m3agent.cli import main
from m3agent.train.control_run import (
    ControlTrainingError,
    plot_curve,
    read_tasks,
    running_mean,
    starting_adapter,
)
from m3agent.train.dataset import write_parquet


def test_train_control_needs_the_train_data_rows(tmp_path, capsys):
    assert main(["train", "control", "--out", str(tmp_path / "run")]) == 2  # a usage error
    assert "needs --data" in capsys.readouterr().err
    assert main(["train", "control", "--out", str(tmp_path / "run"), "--data", "x", "--resample", "-1"]) == 2
    assert "--resample must be 0" in capsys.readouterr().err
    assert main(["train", "control", "--out", str(tmp_path / "run"), "--data", "x", "--warm-tasks", "-1"]) == 2
    assert "--warm-tasks must be 0" in capsys.readouterr().err
    rows = [{"prompt": [{"role": "user", "content": "x"}], "agent_name": "m3agent_memory_build",
             "reward_model": {"ground_truth": ""}, "extra_info": {"task": "{}"}}]
    write_parquet(rows, tmp_path / "train.parquet")
    with pytest.raises(ControlTrainingError, match="no control rows"):
        read_tasks(tmp_path / "train.parquet")


def test_a_run_starts_from_a_new_adapter_the_shipped_one_or_a_given_one(tmp_path):
    from pathlib import Path

    assert starting_adapter("") is None
    shipped = Path(starting_adapter("bundled"))
    assert shipped.parent.name == "control" and (shipped / "adapter_config.json").is_file()
    assert starting_adapter(str(shipped)) == str(shipped)
    with pytest.raises(ControlTrainingError, match="no PEFT adapter there"):
        starting_adapter(str(tmp_path))


def test_a_control_row_becomes_a_task_with_its_evidence(tmp_path):
    extra = {"question": "Who?", "video": "w1", "before_clip": 2, "question_id": "w1_Q01", "memory": "/m/w1.db"}
    write_parquet([{"prompt": [{"role": "system", "content": "s"}], "agent_name": "m3agent_control",
                    "reward_model": {"ground_truth": "Cyril."}, "extra_info": extra}], tmp_path / "train.parquet")
    (tmp_path / "evidence.json").write_text(json.dumps({"w1_Q01": [0, 3]}))
    (task,) = read_tasks(tmp_path / "train.parquet", tmp_path / "evidence.json")
    assert task["answer"] == "Cyril." and task["before_clip"] == 2 and task["evidence"] == [0, 3]
    assert task["memory"] == "/m/w1.db" and task["prompt"][0]["content"] == "s" and "worked" not in task
    (tmp_path / "worked.json").write_text(json.dumps({"w1_Q01": "2 + 3 = 5 plates.", "w9_Q01": "1 + 1 = 2 cups."}))
    (task,) = read_tasks(tmp_path / "train.parquet", tmp_path / "evidence.json", tmp_path / "worked.json")
    assert task["worked"] == "2 + 3 = 5 plates." and task["answer"] == "Cyril."  # the judge keeps the reference
    assert "evidence_queries" not in task
    (tmp_path / "queries.json").write_text(json.dumps({"w1_Q01": {"3": "Where does Cyril work?"}}))
    (task,) = read_tasks(tmp_path / "train.parquet", tmp_path / "evidence.json", queries=tmp_path / "queries.json")
    assert task["evidence_queries"] == {"3": "Where does Cyril work?"} and "worked" not in task


def test_a_missing_or_broken_sidecar_is_a_clear_error(tmp_path):
    extra = {"question": "Who?", "video": "w1", "question_id": "w1_Q01", "memory": "/m/w1.db"}
    write_parquet([{"prompt": [{"role": "system", "content": "s"}], "agent_name": "m3agent_control",
                    "reward_model": {"ground_truth": "Cyril."}, "extra_info": extra}], tmp_path / "train.parquet")
    with pytest.raises(ControlTrainingError, match="cannot read .*gone.json"):
        read_tasks(tmp_path / "train.parquet", tmp_path / "gone.json")
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(ControlTrainingError, match="not a"):
        read_tasks(tmp_path / "train.parquet", None, tmp_path / "list.json")


def test_the_curve_is_drawn(tmp_path):
    steps = [{"step": 1, "reward": 0.25, "accuracy": 0.25}, {"step": 2, "reward": 0.5, "accuracy": 0.5}]
    plot_curve([1.2, 0.8, 0.5], steps, tmp_path / "curve.png")
    assert (tmp_path / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_run_with_no_warm_start_draws_the_grpo_panel_alone(tmp_path):
    steps = [{"step": 1, "reward": 0.5, "accuracy": 0.5}, {"step": 2, "reward": 0.75, "accuracy": 0.75}]
    plot_curve([1.2, 0.8], steps, tmp_path / "both.png")
    plot_curve([], steps, tmp_path / "alone.png")

    def width(path):  # a PNG's IHDR chunk holds the width at bytes 16-20
        return int.from_bytes(path.read_bytes()[16:20], "big")

    assert width(tmp_path / "alone.png") < 0.6 * width(tmp_path / "both.png")


def test_the_running_mean_of_the_grpo_curve_averages_the_steps_so_far_up_to_its_window():
    assert running_mean([0.0, 1.0, 0.5, 0.5], window=2) == [0.0, 0.5, 0.75, 0.5]
    assert running_mean([0.2, 0.4], window=5) == pytest.approx([0.2, 0.3])


@pytest.fixture(scope="module")
def two_worlds(tmp_path_factory):
    """Two small worlds and their training rows, shared by the end-to-end runs."""
    root = tmp_path_factory.mktemp("two_worlds")
    worlds, data = root / "worlds", root / "data"
    assert main(["train", "worlds", "--out", str(worlds), "--count", "2", "--seed", "4"]) == 0
    assert main(["train-data", "--annotations", str(worlds / "worlds.json"), "--memories", str(worlds / "memories"),
                 "--out", str(data)]) == 0
    return worlds, data


@pytest.mark.models
def test_train_control_runs_end_to_end_from_the_command_line_with_shuffled_results(two_worlds, tmp_path, capsys):
    (worlds, data), run = two_worlds, tmp_path / "run"
    assert main(["train", "control", "--data", str(data / "train.parquet"), "--out", str(run),
                 "--evidence", str(worlds / "worlds.evidence.json"), "--worked", str(worlds / "worlds.worked.json"),
                 "--queries", str(worlds / "worlds.queries.json"), "--warm-tasks", "2", "--steps", "1", "--prompts", "1",
                 "--generations", "2", "--threads", "2",
                 "--clip-order", "shuffled", "--resample", "1", "--from-adapter", "bundled",
                 "--lessons", "0.5", "--corrections", "0.6", "--checkpointing"]) == 0
    summary = json.loads((run / "summary.json").read_text())
    assert summary["settings"]["clip_order"] == "shuffled" and len(summary["steps"]) == 1
    assert summary["settings"]["checkpointing"] is True
    assert summary["settings"]["from_adapter"] == "bundled"  # the shipped adapter trained further
    assert summary["settings"]["lessons"] == 0.5 and summary["settings"]["corrections"] == 0.6
    assert summary["corrected"]["corrected"] >= summary["corrected"]["hidden"] + summary["corrected"]["overruled"]
    assert summary["settings"]["grpo"]["resample"] == 1 and summary["steps"][0]["redrawn"] <= 1
    assert len(summary["warm_losses"]) == 1 and summary["tasks"] > summary["tasks_with_follow_ups"] > 0
    assert (run / "adapter.gguf").stat().st_size > 1_000_000 and (run / "curve.png").exists()


@pytest.mark.models
def test_rl_alone_goes_on_from_the_shipped_adapter_with_the_follow_up_search(two_worlds, tmp_path):
    """``--warm-tasks 0``: no warm start, GRPO straight from the shipped adapter (a user's RL on top of it), here with
    ``control.follow_names`` on in the training environment."""
    (worlds, data), run = two_worlds, tmp_path / "run"
    assert main(["--set", "control.follow_names=true", "train", "control", "--data", str(data / "train.parquet"),
                 "--out", str(run), "--evidence", str(worlds / "worlds.evidence.json"), "--warm-tasks", "0",
                 "--steps", "1", "--prompts", "1", "--generations", "2", "--threads", "2",
                 "--from-adapter", "bundled"]) == 0
    summary = json.loads((run / "summary.json").read_text())
    assert summary["warm_losses"] == [] and not (run / "warm").exists() and len(summary["steps"]) == 1
    assert (run / "adapter.gguf").stat().st_size > 1_000_000 and (run / "curve.png").exists()
