"""The memory tools on a real fixture memory: parsing the call format, insert/update/delete/search round trips,
ids that are missing or of the wrong kind, the core block, and malformed calls reported instead of raised."""

import pytest

from m3agent.config import MemoryBuildConfig
from m3agent.memory.model import NodeKind
from m3agent.memory_tools.tools import MemoryTools, ToolCall, parse_tool_calls


@pytest.fixture
def tools(kitchen):
    out = MemoryTools(kitchen, kitchen.video, MemoryBuildConfig(core_chars=60, line_chars=80))
    out.clip = 4  # the chunk after the fixture's four clips
    return out


def run(tools, reply):
    parsed = parse_tool_calls(reply)
    return parsed.errors + tools.apply(parsed.calls)


def live_texts(tools):
    return {n.id: n.text for n in tools.live()}


def test_the_call_format_reads_json_lines_and_ignores_prose():
    reply = """<think>the user names a job</think>Storing it.
```
{"tool": "insert", "kind": "semantic", "text": "  Alice   is a nurse. "}
{"tool": "update", "kind": "episodic", "id": "[7]", "text": "x"},
[{"tool": "delete", "kind": "core"}, {"tool": "search", "query": "nurse", "k": 3}]
```"""
    parsed = parse_tool_calls(reply)
    assert not parsed.errors
    assert parsed.calls == [ToolCall("insert", "semantic", text="Alice is a nurse."),
                            ToolCall("update", "episodic", 7, "x"), ToolCall("delete", "core"),
                            ToolCall("search", query="nurse", k=3)]
    assert parse_tool_calls("I have nothing to store.").calls == []


@pytest.mark.parametrize("line, problem", [
    ('{"tool": "insert", "kind": "semantic", "text": "unterminated', "not one JSON object"),
    ('{"tool": "remember", "text": "x"}', '"tool" must be one of'),
    ('{"tool": "insert", "kind": "procedural", "text": "x"}', 'needs a "kind"'),
    ('{"tool": "insert", "kind": "semantic"}', 'needs a "text"'),
    ('{"tool": "update", "kind": "semantic", "text": "x"}', 'needs the "id"'),
    ('{"tool": "delete", "kind": "episodic", "id": true}', 'needs the "id"'),
    ('{"tool": "search", "query": "  "}', 'needs a "query"'),
    ('{"tool": "search", "query": "x", "k": 0}', '"k" must be'),
    ('{"tool": "delete", "kind": "episodic", "id": 1180591620717411303424}', 'needs the "id"'),  # 2**70: no SQLite id
    ('{"tool": "update", "kind": "semantic", "id": "[99999999999999999999999]", "text": "x"}', 'needs the "id"'),
    ('{"tool": "search", "query": "x", "k": 1180591620717411303424}', '"k" must be'),
    ('{"tool": "insert", "kind": "semantic", "text": "a lone \\ud800"}', "lone surrogate"),
    ('[{"tool": "search", "query": "fridge"}, 3]', "a call is a JSON object"),
])
def test_malformed_calls_become_errors_the_model_reads(line, problem):
    parsed = parse_tool_calls(f'{line}\n{{"tool": "search", "query": "fridge"}}')
    assert parsed.malformed and len(parsed.errors) == 1 and problem in parsed.errors[0].message
    assert parsed.errors[0].render().startswith("- unreadable call: ERROR: ")
    assert ToolCall("search", query="fridge") in parsed.calls  # the valid calls still run


def test_too_many_calls_are_cut_and_reported():
    parsed = parse_tool_calls("\n".join(['{"tool": "search", "query": "a"}'] * 5), max_calls=3)
    assert len(parsed.calls) == 3 and "more than 3 calls" in parsed.errors[0].message


def test_insert_update_delete_search_round_trip_on_the_fixture(tools, kitchen):
    bob = kitchen.ids["bob_face"]
    [inserted] = run(tools, f'{{"tool": "insert", "kind": "semantic", "text": "<face_{bob}> teaches guitar on Mondays"}}')
    assert inserted.ok and inserted.node is not None
    node = inserted.node
    assert live_texts(tools)[node] == f"<face_{bob}> teaches guitar on Mondays"
    assert kitchen.store.text_nodes(kitchen.video, ids=[node])[0].clip == 4  # written in the current chunk's clip

    [found] = run(tools, '{"tool": "search", "query": "teaches guitar Mondays", "k": 3}')
    assert found.ok and found.hits[0]["node"] == node and "teaches guitar" in found.render()
    assert f"[{node}] semantic (chunk 4)" in found.render()

    [updated] = run(tools, f'{{"tool": "update", "kind": "semantic", "id": {node}, '
                           f'"text": "<face_{bob}> teaches guitar on Fridays"}}')
    assert updated.ok and updated.node != node and f"[{node}] replaced by [{updated.node}]" in updated.message
    assert node not in live_texts(tools) and "Fridays" in live_texts(tools)[updated.node]
    old = kitchen.store.text_nodes(kitchen.video, ids=[node])[0]
    assert (old.invalidated_by, old.invalidated_at) == (updated.node, 4)

    episode = kitchen.store.text_nodes(kitchen.video, kind=NodeKind.EPISODIC)
    pasta = next(n.id for n in episode if "cooks pasta" in n.text)
    [changed] = run(tools, f'{{"tool": "update", "kind": "episodic", "id": {pasta}, "text": "Bob cooks risotto"}}')
    assert changed.ok and pasta not in live_texts(tools)
    assert kitchen.store.text_nodes(kitchen.video, ids=[pasta])[0].invalidated_by == changed.node

    [deleted] = run(tools, f'{{"tool": "delete", "kind": "semantic", "id": {updated.node}}}')
    assert deleted.ok and updated.node not in live_texts(tools)
    [found] = run(tools, '{"tool": "search", "query": "teaches guitar Fridays", "k": 20}')
    assert all(hit["node"] not in (node, updated.node) for hit in found.hits)
    # deletes and updates supersede: memory as of before the chunk still holds the old lines
    before = kitchen.search("cooks pasta in the kitchen", video=kitchen.video, lines=20, before_clip=3).lines
    assert pasta in [hit["node"] for hit in before]
    now = kitchen.search("cooks pasta in the kitchen", video=kitchen.video, lines=20).lines
    assert pasta not in [hit["node"] for hit in now]


def test_missing_superseded_and_wrong_kind_ids_are_refused(tools, kitchen):
    lines_before = live_texts(tools)
    results = run(tools, "\n".join([
        '{"tool": "delete", "kind": "semantic", "id": 99999}',
        f'{{"tool": "update", "kind": "semantic", "id": {kitchen.ids["fridge_full"]}, "text": "x"}}',  # superseded
        f'{{"tool": "delete", "kind": "episodic", "id": {kitchen.ids["alice_name"]}}}',  # a semantic line
        f'{{"tool": "delete", "kind": "semantic", "id": {kitchen.ids["alice_face"]}}}',  # a face, not a line
    ]))
    assert [r.ok for r in results] == [False] * 4
    assert "no line [99999]" in results[0].message and "search to find" in results[0].message
    assert "no line" in results[1].message
    assert "is a semantic line, not episodic" in results[2].message
    assert "no line" in results[3].message
    assert live_texts(tools) == lines_before


def test_repeated_fact_reinforces_and_long_text_is_refused(tools):
    [first] = run(tools, '{"tool": "insert", "kind": "semantic", "text": "The balcony plants need water daily"}')
    [again] = run(tools, '{"tool": "insert", "kind": "semantic", "text": "The balcony plants need water daily"}')
    assert again.ok and again.node == first.node and "reinforced" in again.message
    [long] = run(tools, '{"tool": "insert", "kind": "episodic", "text": "%s"}' % ("word " * 30))
    assert not long.ok and "at most 80" in long.message


def test_core_block_insert_update_delete_and_its_limit(tools):
    assert tools.core() == ""
    run(tools, '{"tool": "insert", "kind": "core", "text": "Alice: nurse."}\n'
               '{"tool": "insert", "kind": "core", "text": "Bob: musician."}')
    assert tools.core() == "Alice: nurse.\nBob: musician."
    [too_long] = run(tools, '{"tool": "insert", "kind": "core", "text": "%s"}' % ("x" * 50))
    assert not too_long.ok and "at most 60" in too_long.message and tools.core().startswith("Alice")
    run(tools, '{"tool": "update", "kind": "core", "text": "Alice and Bob share a flat."}')
    assert tools.core() == "Alice and Bob share a flat."
    assert tools.recall("who shares a flat", 2).startswith("Alice and Bob share a flat.")
    assert tools.size().chars == len(tools.core()) + sum(len(n.text) for n in tools.live())
    run(tools, '{"tool": "delete", "kind": "core"}')
    assert tools.core() == ""


def test_search_of_an_empty_source_finds_nothing(db_path, embedder):
    from m3agent.memory import MemoryGraph

    with MemoryGraph.open(db_path, embedder=embedder) as graph:
        tools = MemoryTools(graph, graph.claim_text_source("empty"))
        [result] = run(tools, '{"tool": "search", "query": "anything"}')
        assert result.ok and result.hits == [] and result.message == "nothing stored matches"
        assert tools.recall("anything", 5) == ""


def test_an_episodic_update_lands_whole_or_not_at_all(tools, kitchen, monkeypatch):
    pasta = next(n.id for n in kitchen.store.text_nodes(kitchen.video, kind=NodeKind.EPISODIC) if "pasta" in n.text)
    before = kitchen.store.next_node_id()

    def crash(*args, **kwargs):
        raise RuntimeError("killed between the two writes")

    monkeypatch.setattr(kitchen, "retire_lines", crash)  # the retirement, inside the graph's editing()
    with pytest.raises(RuntimeError):
        run(tools, f'{{"tool": "update", "kind": "episodic", "id": {pasta}, "text": "Bob cooks risotto"}}')
    assert kitchen.store.next_node_id() == before  # the new line was rolled back with the failed retirement
    assert pasta in live_texts(tools)
