"""The app's logic without the app: memories of the data folder, answers with their trace and evidence."""

import json
import re
import shutil
import subprocess
import sys

import pytest

from m3agent.config import load_config
from m3agent.errors import M3AgentError
from m3agent.memory.errors import UnknownEntityError
from m3agent.memory.locks import WriterBusyError
from m3agent.workspace import ChatChoice, Workspace
from m3agent.workspace.folder import DataFolderError


@pytest.fixture
def workspace(tmp_path, kitchen):
    data = tmp_path / "data"
    (data / "memories").mkdir(parents=True)
    kitchen.close()
    shutil.copyfile(kitchen.store.path, data / "memories" / "kitchen.db")
    (data / "memories" / "empty.db").write_bytes(b"")  # a memory being started: not listed yet
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(["Action: [Search]\nContent: who plays guitar?",
                                   "Action: [Answer]\nContent: <character_3> plays guitar"]))
    config = load_config(None, {}, [f"app.data_dir={data}", "control.chat.backend=scripted",
                                    f"control.chat.model={replies}"])
    ws = Workspace(config, start_queue=False)
    yield ws
    ws.close()


def test_only_memories_with_clips_are_listed(workspace):
    assert workspace.memories() == ["memories/kitchen.db"]
    assert workspace.last_clip("memories/kitchen.db") == 3
    with pytest.raises(DataFolderError):
        workspace.graph("../outside.db")


def test_an_answer_carries_its_trace_and_clickable_evidence(workspace, kitchen):
    answer = workspace.ask("memories/kitchen.db", "Who plays guitar?")
    assert answer["answer"].endswith("plays guitar") and "<character" not in answer["answer"]
    searches = [r for r in answer["trace"] if r["action"] == "search"]
    assert searches[0]["by"] == "seed" and searches[1]["content"] == "who plays guitar?"
    assert searches[0]["hits"] and {"clip", "start", "end", "score"} <= set(searches[0]["hits"][0])
    assert answer["evidence"] and answer["evidence"][0]["line"]
    assert answer["unfound"] == []  # "<character_3> plays guitar": every word of it is in the notes shown
    assert workspace.clip_span("memories/kitchen.db", answer["evidence"][0]["clip"]) is not None
    as_of = workspace.ask("memories/kitchen.db", "Who plays guitar?", before_clip=0)
    assert all(h["clip"] <= 0 for r in as_of["trace"] for h in r["hits"])


def test_the_video_outside_the_folder_is_never_served(workspace):
    assert workspace.video_file("memories/kitchen.db") is None  # kitchen.mp4 is not in the folder
    assert workspace.voice_sample("memories/kitchen.db", 3.0, 5.0) is None


def test_chat_settings(workspace):
    chat = workspace.config.control.chat
    assert ChatChoice("configured").apply(chat) == chat
    served = ChatChoice("openai", "http://127.0.0.1:8000/v1", "m").apply(chat)
    assert (served.backend, served.base_url, served.model) == ("openai", "http://127.0.0.1:8000/v1", "m")
    with pytest.raises(DataFolderError, match="needs the server's URL"):
        ChatChoice("openai").apply(chat)
    with pytest.raises(DataFolderError, match="unknown chat backend"):
        ChatChoice("telnet").apply(chat)


def test_one_file_name_in_two_places_gets_two_memories(workspace):
    root = workspace.folder.root
    for place in ("a", "b"):
        (root / place).mkdir()
        (root / place / "talk.mp4").write_bytes(b"not decoded here: the queue is not started")
    first, second = workspace.memorize("a/talk.mp4"), workspace.memorize("b/talk.mp4")
    assert first.memory.endswith("/memories/talk.db") and re.search(r"/memories/talk-[0-9a-f]{8}\.db$", second.memory)
    assert workspace.memory_of("b/talk.mp4") == workspace.folder.relative(second.memory)
    assert workspace.memorize("a/talk.mp4").id == first.id  # asked again: the same job
    (root / "kitchen.mp4").write_bytes(b"x")  # memories/kitchen.db holds another kitchen.mp4
    assert workspace.memory_of("kitchen.mp4").startswith("memories/kitchen-")


KITCHEN = "memories/kitchen.db"


def _labels(workspace):
    return sorted(card.label for card in workspace.characters(KITCHEN))


def test_a_rename_redraws_the_cards_and_its_undo_brings_the_old_name_back(workspace, kitchen):
    alice = kitchen.ids["alice_face"]
    before = _labels(workspace)
    assert f"Alice (character_{alice})" in before  # read (and cached) before the correction
    fix = workspace.correct(KITCHEN, "rename", f"character_{alice}", "  Alicia   Keys ")
    assert (fix["action"], fix["a"], fix["value"]) == ("rename", alice, "Alicia Keys")
    assert fix["text"] == f"face_{alice} is called “Alicia Keys”"
    assert f"Alicia Keys (character_{alice})" in _labels(workspace)  # the shared read-only graph sees it
    listed = workspace.corrections(KITCHEN)
    assert [(c["id"], c["action"], c["text"]) for c in listed] == [(fix["id"], "name", fix["text"])]
    assert workspace.undo_correction(KITCHEN, str(fix["id"])) == fix["text"]
    assert _labels(workspace) == before and workspace.corrections(KITCHEN) == []
    with pytest.raises(UnknownEntityError, match=f"no correction {fix['id']}"):
        workspace.undo_correction(KITCHEN, fix["id"])


def test_merge_and_not_same_change_who_is_on_which_card(workspace, kitchen):
    face, voice, bob = kitchen.ids["alice_face"], kitchen.ids["alice_voice"], kitchen.ids["bob_face"]

    def members():
        return sorted(sorted(card.members) for card in workspace.characters(KITCHEN))

    assert members() == sorted([[f"face_{face}", f"voice_{voice}"], [f"face_{bob}"]])
    apart = workspace.correct(KITCHEN, "not-same", f"face_{face}", f"voice_{voice}")
    assert apart["text"] == f"face_{face} and voice_{voice} are two people"
    assert members() == sorted([[f"face_{face}"], [f"voice_{voice}"], [f"face_{bob}"]])
    same = workspace.correct(KITCHEN, "merge", f"character_{bob}", f"voice_{voice}")
    assert same["text"] == f"face_{bob} and voice_{voice} are one person"
    assert members() == sorted([[f"face_{face}"], [f"face_{bob}", f"voice_{voice}"]])
    assert [c["action"] for c in workspace.corrections(KITCHEN)] == ["apart", "same"]
    workspace.undo_correction(KITCHEN, apart["id"])
    workspace.undo_correction(KITCHEN, same["id"])
    assert members() == sorted([[f"face_{face}", f"voice_{voice}"], [f"face_{bob}"]])


@pytest.mark.parametrize("action, a, b, message", [
    ("merge", "face_999", "character_1", "no <face_999>"),
    ("merge", "Alice", "Alice", "one node"),
    ("rename", "Alice", "   ", "needs a name"),
    ("rename", "", "Zed", "needs a character or a node"),
    ("not-same", "Nobody", "Alice", "no character called 'Nobody'"),
    ("teleport", "Alice", "Bob", "unknown correction"),
])
def test_a_correction_that_cannot_be_made_says_why_and_changes_nothing(workspace, action, a, b, message):
    before = _labels(workspace)
    with pytest.raises(M3AgentError, match=re.escape(message)):
        workspace.correct(KITCHEN, action, a, b)
    assert _labels(workspace) == before and workspace.corrections(KITCHEN) == []


def test_undo_needs_the_number_of_a_correction(workspace):
    for number in ("", "one", "-1", "9" * 19):
        with pytest.raises(UnknownEntityError, match="give its number"):
            workspace.undo_correction(KITCHEN, number)
    with pytest.raises(DataFolderError, match="no such memory"):
        workspace.correct("memories/none.db", "rename", "Alice", "Zed")


def test_no_correction_while_a_memorization_writes_the_memory(workspace):
    """Another process holds the memory's writer lock (as a memorization job does): the correction is refused
    with a message naming it, and nothing changes."""
    lock = workspace.folder.resolve(KITCHEN + ".lock")
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(WriterBusyError, match="being written by another process"):
            workspace.correct(KITCHEN, "rename", "Alice", "Zed")
    finally:
        holder.kill()
        holder.wait()
    assert workspace.corrections(KITCHEN) == []
    assert workspace.correct(KITCHEN, "rename", "Alice", "Zed")["value"] == "Zed"  # once it is done


HOLD_LOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(60)
"""


def test_split_moves_a_nodes_clips_to_a_new_node_and_undo_joins_them_again(workspace, kitchen):
    face = kitchen.ids["alice_face"]
    card = next(c for c in workspace.characters(KITCHEN) if c.number == face)
    assert card.clips[:2] == [0, 1]
    fix = workspace.correct(KITCHEN, "split", f"face_{face}", "1")
    new = fix["b"] if isinstance(fix["b"], str) else f"face_{fix['b']}"
    assert fix["action"] == "split" and list(fix["clips"]) == [1] and new.startswith("face_") and new != f"face_{face}"
    assert fix["text"] == f"face_{face} in clips 1 split off as {new}"
    owner = next(c for c in workspace.characters(KITCHEN) if new in c.members)
    assert f"face_{face}" not in owner.members and 1 in owner.clips
    assert 1 not in next(c for c in workspace.characters(KITCHEN) if f"face_{face}" in c.members).clips
    listed = workspace.corrections(KITCHEN)
    assert [(c["action"], c["text"]) for c in listed] == [("split", fix["text"])]
    workspace.undo_correction(KITCHEN, fix["id"])
    assert workspace.corrections(KITCHEN) == []
    assert not any(new in c.members for c in workspace.characters(KITCHEN))
    assert next(c for c in workspace.characters(KITCHEN) if c.number == face).clips[:2] == [0, 1]
    with pytest.raises(UnknownEntityError, match="is not in clip 3"):
        workspace.correct(KITCHEN, "split", f"face_{face}", "3")
    with pytest.raises(UnknownEntityError, match="say which one to split"):
        workspace.correct(KITCHEN, "split", f"character_{face}", "1")  # Alice is a face and a voice
