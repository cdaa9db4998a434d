"""The untrained chat policy over text records: chunks by session, what the model is shown per chunk, its
calls applied, garbage survived, and a run that stops half way resumed by running it again."""

import json

import pytest

from m3agent.config import MemoryBuildConfig
from m3agent.memory import MemoryGraph
from m3agent.memory.text_sources import parse_record
from m3agent.memory_tools.policy import Chunk, build_memory, chunks_of, record_chunks
from m3agent.memory_tools.tools import MemoryTools
from m3agent.models.llm.base import ChatError
from m3agent.models.llm.scripted import ScriptedChat
from tests.data import CHAT

RECORDS = [parse_record(r) for r in CHAT]


def chunk_of(messages):
    """The chunk text of the policy's observation (the user message's last block)."""
    return messages[-1]["content"].split("New chunk:\n", 1)[1].rsplit("\n\nReply with", 1)[0]


def keep_first_line_as_fact(messages):
    first = chunk_of(messages).splitlines()[0]
    return json.dumps({"tool": "insert", "kind": "episodic", "text": first})


def test_records_are_chunked_by_session_and_size():
    chunks = record_chunks(RECORDS, per_chunk=8)
    assert [c.records for c in chunks] == [("D1:1", "D1:2"), ("D2:1", "D2:2")]
    assert chunks[0].text == ("[8 May 2023] Caroline: I went to the LGBTQ support group yesterday\n"
                              "[8 May 2023] Melanie: That is great, I painted a sunrise")
    assert [c.records for c in record_chunks(RECORDS, per_chunk=1)] == [("D1:1",), ("D1:2",), ("D2:1",), ("D2:2",)]
    mixed = chunks_of([CHAT[0], CHAT[1], "  <face_3> opens   the door. ", CHAT[2]], per_chunk=8)
    assert [c.text for c in mixed][1] == "<face_3> opens the door."
    assert [c.records for c in mixed] == [("D1:1", "D1:2"), (), ("D2:1",)]
    with pytest.raises(ValueError, match="record"):
        chunks_of([{"id": "x"}], 8)
    with pytest.raises(ValueError, match="a chunk is"):
        chunks_of([3], 8)


def test_the_policy_sees_core_related_lines_and_its_last_results(db_path, embedder):
    replies = [
        '{"tool": "insert", "kind": "core", "text": "Caroline and Melanie are friends."}\n'
        '{"tool": "insert", "kind": "semantic", "text": "Caroline goes to an LGBTQ support group."}\n'
        '{"tool": "delete", "kind": "semantic", "id": 4242}',
        "nothing new",
    ]
    chat = ScriptedChat(replies)
    with MemoryGraph.open(db_path, embedder=embedder) as graph:
        report = build_memory(chat, graph, "conv", RECORDS, MemoryBuildConfig())
        assert report.to_dict() | {"seconds": 0} == {
            "source": "conv", "policy": "chat", "chunks": 2, "already_read": 0, "calls": 3, "failed_calls": 1,
            "malformed_replies": 0, "lines": 1, "core_chars": 33, "seconds": 0}
    first, second = chat.calls
    assert first[0]["role"] == "system" and '{"tool": "insert"' in first[0]["content"]
    assert "Chunk 1 of 2." in first[1]["content"] and "Core memory:\n(empty)" in first[1]["content"]
    seen = second[1]["content"]
    assert "Chunk 2 of 2." in seen and "Core memory:\nCaroline and Melanie are friends." in seen
    assert "Memory holds 1 semantic and 0 episodic lines" in seen
    assert "] semantic (chunk 0): Caroline goes to an LGBTQ support group." in seen  # related, with its id
    assert "- delete semantic 4242: ERROR: memory holds no line [4242]" in seen
    assert "counselling course in June" in chunk_of(second)
    assert len(second) == 2  # each chunk is one bounded request: system + observation


def test_garbage_replies_never_stop_the_stream(db_path, embedder):
    chat = ScriptedChat(["{not json", '{"tool": "insert"}', "Sure! Here is what I remember: lots."])
    with MemoryGraph.open(db_path, embedder=embedder) as graph:
        report = build_memory(chat, graph, "conv", RECORDS, MemoryBuildConfig(chunk_records=1))
    t = report.tally
    assert (report.chunks, t.replies, t.calls, t.failed, t.malformed, report.lines) == (4, 4, 0, 2, 2, 0)
    assert "not one JSON object" in chat.calls[1][1]["content"]


def test_an_interrupted_run_resumes_where_it_stopped(db_path, embedder):
    def failing_on_third(messages):
        if "camping" in chunk_of(messages):
            raise ChatError("the server went away")
        return keep_first_line_as_fact(messages)

    config = MemoryBuildConfig(chunk_records=1)
    with MemoryGraph.open(db_path, embedder=embedder) as graph:
        with pytest.raises(ChatError):
            build_memory(ScriptedChat(failing_on_third, retries=0), graph, "conv", RECORDS, config)
    chat = ScriptedChat(keep_first_line_as_fact)
    with MemoryGraph.open(db_path, embedder=embedder) as graph:
        report = build_memory(chat, graph, "conv", RECORDS, config)
        assert (report.already, report.chunks, len(chat.calls)) == (2, 2, 2)
        assert "camping" in chunk_of(chat.calls[0])
        again = build_memory(chat, graph, "conv", RECORDS, config)
        assert (again.already, again.chunks, len(chat.calls)) == (4, 0, 2)  # nothing is read twice
        video = graph.resolve_video("conv").id
        tools = MemoryTools(graph, video)
        assert sorted(n.text for n in tools.live()) == sorted(r.line() for r in RECORDS)
        assert [c.id for c in graph.clips(video)] == [0, 1, 2, 3]  # a clip per chunk that wrote something


def test_chunk_is_plain_data():
    assert Chunk("x") == Chunk("x", (), None)
