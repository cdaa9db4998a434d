"""``m3agent remember --policy chat``: the untrained chat policy through the CLI, with a scripted chat backend."""

import json

import pytest

from m3agent.cli import main
from m3agent.memory import MemoryGraph
from m3agent.memory_tools.tools import MemoryTools
from tests.data import CHAT as ALL_CHAT

CHAT = ALL_CHAT[:3]
REPLIES = [
    '{"tool": "insert", "kind": "episodic", "text": "[8 May 2023] Caroline went to an LGBTQ support group."}\n'
    '{"tool": "insert", "kind": "semantic", "text": "Melanie paints."}',
    'Camping is not worth keeping.\n{"tool": "insert"}\n'
    '{"tool": "insert", "kind": "core", "text": "Caroline and Melanie are friends."}',
]
HASHING = ["--set", "embedder.backend=hashing", "--set", "embedder.model=256"]


@pytest.fixture
def files(tmp_path):
    records = tmp_path / "turns.jsonl"
    records.write_text("\n".join(json.dumps(r) for r in CHAT) + "\n", encoding="utf-8")
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(REPLIES), encoding="utf-8")
    return str(tmp_path / "memory.db"), str(records), str(replies)


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_remember_with_the_chat_policy_keeps_what_the_model_chose(files, capsys, embedder):
    db, records, replies = files
    scripted = ["--set", "control.chat.backend=scripted", "--set", f"control.chat.model={replies}"]
    code, out, err = run(capsys, *HASHING, *scripted, "remember", db, "--source", "locomo", "--jsonl", records,
                         "--policy", "chat", "--quiet")
    assert code == 0, err
    report = json.loads(out)
    assert {k: report[k] for k in ("source", "policy", "chunks", "calls", "failed_calls", "malformed_replies",
                                   "lines", "core_chars", "skipped_lines")} == {
        "source": "locomo", "policy": "chat", "chunks": 2, "calls": 3, "failed_calls": 1, "malformed_replies": 1,
        "lines": 2, "core_chars": 33, "skipped_lines": 0}
    with MemoryGraph.open(db, readonly=True, create=False) as graph:
        tools = MemoryTools(graph, graph.resolve_video("locomo").id)
        assert sorted(n.text for n in tools.live()) == [
            "Melanie paints.", "[8 May 2023] Caroline went to an LGBTQ support group."]  # not the raw records
        assert tools.core() == "Caroline and Melanie are friends."
    code, out, _ = run(capsys, *HASHING, "search", db, "support group", "--video", "locomo", "--lines", "1", "--json")
    assert code == 0 and "Caroline went to an LGBTQ support group" in json.loads(out)["lines"][0]["text"]

    code, out, _ = run(capsys, *HASHING, *scripted, "remember", db, "--source", "locomo", "--jsonl", records,
                       "--policy", "chat", "--quiet")
    assert code == 0 and (json.loads(out)["chunks"], json.loads(out)["already_read"]) == (0, 3)  # nothing read twice


def test_the_memory_build_chat_section_wins_over_control_chat(files, capsys, tmp_path):
    db, records, replies = files
    silent = tmp_path / "silent.json"
    silent.write_text(json.dumps(["nothing to keep"]), encoding="utf-8")
    code, out, err = run(capsys, *HASHING, "--set", "control.chat.backend=scripted",
                         "--set", f"control.chat.model={replies}", "--set", "train.memory_build.chat.backend=scripted",
                         "--set", f"train.memory_build.chat.model={silent}", "--set", "train.memory_build.chunk_records=1",
                         "remember", db, "--source", "s", "--jsonl", records, "--policy", "chat", "--quiet")
    assert code == 0, err
    assert {k: json.loads(out)[k] for k in ("chunks", "calls", "lines")} == {"chunks": 3, "calls": 0, "lines": 0}


def test_direct_stays_the_default_and_procedural_refuses_the_policy(files, capsys):
    db, records, _ = files
    code, out, _ = run(capsys, *HASHING, "remember", db, "--source", "raw", "--jsonl", records, "--quiet")
    assert code == 0 and json.loads(out)["added"] == 3
    code, _, err = run(capsys, *HASHING, "--set", "control.chat.backend=scripted", "remember", db, "--source", "p",
                       "--jsonl", records, "--procedural", "--policy", "chat", "--quiet")
    assert code == 2 and "leave out --policy chat" in err


@pytest.mark.models  # the embedded SmolLM2-135M answers: whatever it writes, the stream goes on
def test_the_embedded_chat_model_runs_untrained(files, capsys):
    db, records, _ = files
    code, out, err = run(capsys, *HASHING, "--set", "train.memory_build.max_tokens=64", "--set",
                         "train.memory_build.chunk_records=8", "remember", db, "--source", "s", "--jsonl", records,
                         "--policy", "chat", "--quiet")
    assert code == 0, err
    report = json.loads(out)
    assert report["chunks"] == 2 and report["calls"] + report["failed_calls"] >= 0
