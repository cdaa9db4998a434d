"""The app's logic without the app: memories of the data folder, answers with their trace and evidence."""

import json
import re
import shutil

import pytest

from m3agent.config import load_config
from m3agent.datafolder import DataFolderError
from m3agent.workspace import ChatChoice, Workspace


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
