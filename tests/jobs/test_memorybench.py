"""The MemoryBench harness end to end on the repository's fixture: every driver, resume, bad replies."""

import json
from pathlib import Path

import pytest

from m3agent.cli import main
from m3agent.config import load_config
from m3agent.eval.memorybench.records import load_records
from m3agent.jobs.memorybench import MemoryBenchError, MemoryBenchSetup, run_memorybench
from m3agent.models.embed.hashing import HashingEmbedder
from m3agent.models.llm.scripted import ScriptedChat
from tests.data import MEMORYBENCH

FIXTURE = MEMORYBENCH
USER = '{"reasoning": "fine", "satisfaction_score": 8, "behavior": "end_conversation", "response": null}'


def first_memory(messages):
    """Answers with the first memory line shown (so retrieval decides the score)."""
    lines = [line[2:] for line in messages[0]["content"].splitlines() if line.startswith("- ")]
    return lines[0].split(": ", 1)[-1] if lines else "I do not know"


def make_setup(out, embedder=None, judge=("4",), user=(USER,), notices=None, **overrides):
    sets = ["bench.memorybench.batch=4", "bench.memorybench.steps=2"] + [f"{k}={v}" for k, v in overrides.items()]
    chats = {"chat": ScriptedChat(first_memory), "user": ScriptedChat(list(user)), "judge": ScriptedChat(list(judge))}
    setup = MemoryBenchSetup(out=Path(out), config=load_config(None, {}, sets),
                             embedder=embedder or (lambda: HashingEmbedder(256)),
                             chat=lambda: chats["chat"], user=lambda: chats["user"], judge=lambda: chats["judge"],
                             corpus_dir=FIXTURE / "corpus",
                             notice=(notices.append if notices is not None else lambda text: None))
    return setup, chats


@pytest.mark.parametrize("driver, steps", [("off-policy", ["final"]), ("stepwise", ["begin", "[0,4)", "[4,8)",
                                                                                  "[8,12)", "[12,16)"]),
                                           ("on-policy", ["step 1", "step 2"])])
def test_each_driver_end_to_end(tmp_path, driver, steps):
    setup, chats = make_setup(tmp_path)
    summary = run_memorybench(load_records(FIXTURE / "records.jsonl"), driver, setup)
    assert set(summary["systems"]) == {"core", "bm25-m", "bm25-s", "embed-m", "embed-s"}
    core = summary["systems"]["core"]
    assert list(core["steps"]) == steps
    last = core["steps"][steps[-1]]
    assert last["cases"] == 5 and last["problems"] == 0
    assert set(last["normalized"]) == {"Open-Domain", "Legal", "LiSo", "SiLo", "LiLo", "SiSo"}
    assert all(0 <= v <= 1 for v in last["normalized"].values())
    assert core["memory_seconds_per_case"] > 0 and last["predict_seconds_p50"] >= 0
    assert summary["split"]["Locomo-0"] == [4, 2] and summary["split"]["NFCats"] == [4, 1]
    assert len(summary["malformed_records"]) == 2
    report = (tmp_path / "report.md").read_text()
    assert "| core |" in report and "Problems" in report
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert all(r["driver"] == driver and r["prediction"] is not None for r in rows)
    if driver == "on-policy":
        lived = [json.loads(line) for line in (tmp_path / "lived.jsonl").read_text().splitlines()]
        assert lived and all(item["dialog"][0]["role"] == "user" for item in lived)
        assert any(r["path"] == "metric" for item in lived for r in item["reactions"])
        assert any(r["path"] == "llm" for item in lived for r in item["reactions"])
        assert chats["user"].calls  # the LLM-as-user path was taken


def test_core_learns_lessons_and_uses_them(tmp_path):
    setup, chats = make_setup(tmp_path, **{"bench.memorybench.systems": "core"})
    run_memorybench(load_records(FIXTURE / "records.jsonl"), "off-policy", setup)
    shown = [m[0]["content"] for m in chats["chat"].calls]
    assert any("Lessons from earlier feedback" in text for text in shown)
    from m3agent.memory import MemoryGraph

    with MemoryGraph.open(tmp_path / "memories" / "core-off-policy.db", readonly=True) as graph:
        assert graph.store.counts()["nodes"]["procedural"] > 0


def test_a_rerun_asks_nothing_again(tmp_path):
    records = load_records(FIXTURE / "records.jsonl")
    setup, chats = make_setup(tmp_path, **{"bench.memorybench.systems": "core,bm25-s"})
    first = run_memorybench(records, "on-policy", setup)
    asked = len(chats["chat"].calls)
    setup, chats = make_setup(tmp_path, **{"bench.memorybench.systems": "core,bm25-s"})
    again = run_memorybench(records, "on-policy", setup)
    assert asked > 0 and chats["chat"].calls == [] and chats["user"].calls == []
    assert again["systems"] == first["systems"]


def test_a_judge_without_a_grade_is_marked_and_the_run_goes_on(tmp_path):
    setup, _ = make_setup(tmp_path, judge=("Great answer!",), **{"bench.memorybench.systems": "embed-m"})
    summary = run_memorybench(load_records(FIXTURE / "records.jsonl"), "off-policy", setup)
    problems = [p["problem"] for p in summary["problems"]]
    assert problems and all(p.startswith("judge: the judge gave no grade") for p in problems)
    assert summary["systems"]["embed-m"]["steps"]["final"]["cases"] == 5


def test_a_user_reply_that_is_not_json_is_marked(tmp_path):
    setup, _ = make_setup(tmp_path, user=("I think it was fine",), **{"bench.memorybench.systems": "bm25-m"})
    run_memorybench(load_records(FIXTURE / "records.jsonl"), "on-policy", setup)
    lived = [json.loads(line) for line in (tmp_path / "lived.jsonl").read_text().splitlines()]
    llm = [r for item in lived for r in item["reactions"] if r["path"] == "llm"]
    assert llm and all("not JSON" in r["problem"] for r in llm)


def test_an_empty_corpus_and_empty_data(tmp_path):
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "Locomo-0.jsonl").write_text("")
    notices = []
    setup, _ = make_setup(tmp_path / "out", notices=notices, **{"bench.memorybench.systems": "bm25-m"})
    setup.corpus_dir = tmp_path / "corpus"
    summary = run_memorybench(load_records(FIXTURE / "records.jsonl"), "off-policy", setup)
    assert any("is empty" in n for n in notices)
    assert summary["systems"]["bm25-m"]["steps"]["final"]["cases"] == 5
    with pytest.raises(MemoryBenchError, match="no usable test case"):
        run_memorybench([], "off-policy", setup)


@pytest.mark.models
def test_every_driver_with_the_embedded_embedder(tmp_path):
    from m3agent.config import EmbedderConfig
    from m3agent.factory import build_embedder

    embedder = build_embedder(EmbedderConfig())
    for driver in ("off-policy", "stepwise", "on-policy"):
        setup, _ = make_setup(tmp_path / driver, embedder=lambda: embedder)
        summary = run_memorybench(load_records(FIXTURE / "records.jsonl"), driver, setup)
        last = list(summary["systems"]["core"]["steps"].values())[-1]
        assert last["cases"] == 5 and last["problems"] == 0


def test_the_command_line(tmp_path, capsys):
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(["4"]))
    code = main(["--set", "embedder.backend=hashing", "--set", "bench.memorybench.answer.backend=scripted",
                 "--set", f"bench.memorybench.answer.model={replies}", "--set", "bench.memorybench.judge.backend=scripted",
                 "--set", f"bench.memorybench.judge.model={replies}", "bench", "memorybench", "--data",
                 str(FIXTURE / "records.jsonl"), "--driver", "off-policy", "--out", str(tmp_path / "out"),
                 "--systems", "bm25-m,embed-s", "--quiet", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    summary = json.loads(out.out)
    assert set(summary["systems"]) == {"bm25-m", "embed-s"} and summary["driver"] == "off-policy"
    code = main(["bench", "memorybench", "--driver", "off-policy", "--out", str(tmp_path / "x")])
    assert code == 2 and "MEMORY_BENCH_PATH" in capsys.readouterr().err


def test_the_run_folder_is_ours_or_refused_untouched(tmp_path):
    from m3agent.files.outfolder import OutFolderError, fingerprint

    records = load_records(FIXTURE / "records.jsonl")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "report.md").write_text("their report")
    setup, chats = make_setup(tmp_path / "out", **{"bench.memorybench.systems": "bm25-m"})
    with pytest.raises(OutFolderError, match="holds files of no m3agent bench memorybench run"):
        run_memorybench(records, "off-policy", setup)
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["report.md"] and chats["chat"].calls == []
    setup, _ = make_setup(tmp_path / "ours", **{"bench.memorybench.systems": "bm25-m"})
    run_memorybench(records, "off-policy", setup)
    setup, chats = make_setup(tmp_path / "ours", **{"bench.memorybench.systems": "bm25-m", "bench.memorybench.seed": 7})
    with pytest.raises(OutFolderError, match="made with other bench.memorybench.seed;"):
        run_memorybench(records, "off-policy", setup)  # its answers and lived dialogs came from another seed
    setup, chats = make_setup(tmp_path / "ours", **{"bench.memorybench.systems": "bm25-m,core"})
    setup.data = fingerprint(records)  # what the CLI says: records read, of which --datasets takes a part
    run_memorybench(records[:-1], "off-policy", setup)  # the same data: another system joins


def test_the_users_memory_settings_reach_every_systems_memory(tmp_path, monkeypatch):
    from m3agent.eval.memorybench.systems import MemorySystem

    seen = []
    close = MemorySystem.close
    monkeypatch.setattr(MemorySystem, "close", lambda self: (seen.append(self.graph.config), close(self)))
    setup, _ = make_setup(tmp_path, **{"memory.search.top_k": 7, "memory.index.ann_threshold": 123})
    run_memorybench(load_records(FIXTURE / "records.jsonl"), "off-policy", setup)
    assert len(seen) == 5 and all(c == setup.config.memory and c.search.top_k == 7 for c in seen)
