"""Text records on the video core: sessions as clips, speakers as entities, ids stored once, procedures apart."""

import json

import numpy as np
import pytest

from m3agent.memory import MemoryGraph
from m3agent.memory.model import NodeKind
from m3agent.memory.text_sources import (
    NotATextSourceError,
    RecordError,
    TextRecord,
    parse_record,
    read_records,
)
from tests.data import CHAT as ALL_CHAT

CHAT = ALL_CHAT[:3]


def records(items=CHAT):
    return [parse_record(r) for r in items]


def test_records_become_lines_of_session_clips_with_speakers(db_path, embedder):
    with MemoryGraph.open(db_path, embedder=embedder) as graph:
        report = graph.remember("conv", records())
        assert report.to_dict() == {"source": "conv", "added": 3, "already_stored": 0, "clips": 2}
        video = graph.resolve_video("conv")
        assert [c.id for c in graph.clips(video.id)] == [0, 1]
        lines = graph.store.text_nodes(video.id)
        assert [n.text for n in lines] == [
            "[8 May 2023] Caroline: I went to the LGBTQ support group yesterday",
            "[8 May 2023] Melanie: That is great, I painted a sunrise",
            "[25 May 2023] Melanie: We went camping with the kids"]
        assert [n.clip for n in lines] == [0, 0, 1]
        speakers = graph.store.speakers(video.id)
        assert set(speakers) == {"Caroline", "Melanie"}
        assert graph.store.texts_linked_to([speakers["Melanie"]]) == [lines[1].id, lines[2].id]
        assert graph.store.node_meta([lines[0].id])[lines[0].id] == {
            "record": "D1:1", "time": "8 May 2023", "speaker": "Caroline", "session": "1"}


def test_the_same_ids_are_stored_once_and_a_session_continues_in_its_clip(db_path, embedder):
    with MemoryGraph.open(db_path, embedder=embedder) as graph:
        graph.remember("conv", records())
        again = graph.remember("conv", records() + records([{"id": "D1:3", "text": "Thanks!", "speaker": "Caroline",
                                                              "session": "1"}, {"id": "X", "text": "no session"}]))
        assert (again.added, again.already) == (2, 3)
        video = graph.resolve_video("conv").id
        texts = {n.text: n.clip for n in graph.store.text_nodes(video)}
        assert texts["Caroline: Thanks!"] == 0  # back in session 1's clip
        assert texts["no session"] == 2
        assert len(graph.store.speakers(video)) == 2  # Caroline is the same speaker node
        duplicates = graph.remember("conv", records([{"id": "Y", "text": "one"}, {"id": "Y", "text": "two"}]))
        assert (duplicates.added, duplicates.already, duplicates.changed) == (1, 0, ["Y"])  # said, not dropped
        same = graph.remember("conv", records([{"id": "Z", "text": "one"}, {"id": "Z", "text": "one"}]))
        assert (same.added, same.already, same.changed) == (1, 1, [])


def test_procedural_lines_are_kept_apart(db_path, embedder):
    with MemoryGraph.open(db_path, embedder=embedder) as graph:
        graph.remember("conv", records())
        graph.remember("conv", [TextRecord("F1", "When the user asks about camping, give the date of the trip")],
                       procedural=True)
        declarative = graph.search("camping trip date", lines=10, threshold=0.0).lines
        assert declarative and all(line["kind"] == "episodic" for line in declarative)
        clips = graph.search("camping trip date", top_k=5, threshold=0.0).clips
        assert all("give the date" not in line for clip in clips for line in clip.lines)
        lessons = graph.search("camping", lines=10, kinds=[NodeKind.PROCEDURAL]).lines
        assert [line["id"] for line in lessons] == ["F1"]


def test_a_lesson_on_a_video_is_seen_from_its_clip_on(kitchen):
    node = kitchen.remember_lesson(kitchen.video, 2, "When asked about the fridge, check the latest clip",
                                   meta={"record": "q1"})
    kinds = [NodeKind.PROCEDURAL]
    assert [line["node"] for line in kitchen.search("fridge", lines=5, kinds=kinds).lines] == [node]
    assert kitchen.search("fridge", lines=5, kinds=kinds, before_clip=1).lines == []
    assert [c.id for c in kitchen.clips(kitchen.video)] == [0, 1, 2, 3]  # no clip was added
    with pytest.raises(ValueError, match="no clip 9"):
        kitchen.remember_lesson(kitchen.video, 9, "nowhere")


def test_a_video_is_not_a_text_source(kitchen):
    with pytest.raises(NotATextSourceError, match="is a video"):
        kitchen.remember("kitchen", records())


@pytest.mark.parametrize("value, reason", [
    ([1, 2], "JSON object"),
    ({"text": "no id"}, "no usable"),
    ({"id": True, "text": "x"}, "no usable"),
    ({"id": "a", "text": "  "}, 'no "text"'),
    ({"id": "a", "text": "x", "speaker": {"n": 1}}, "must be text"),
])
def test_bad_records_say_what_is_wrong(value, reason):
    with pytest.raises(ValueError, match=reason):
        parse_record(value)


def test_a_bad_line_is_reported_and_the_rest_is_read(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join([json.dumps(CHAT[0]), "{oops", json.dumps({"id": 3}), "", json.dumps(CHAT[2])]))
    found, problems = read_records(path)
    assert [r.id for r in found] == ["D1:1", "D2:1"]
    assert [n for n, _ in problems] == [2, 3] and "not JSON" in problems[0][1]
    with pytest.raises(RecordError, match="not found"):
        read_records(tmp_path / "missing.jsonl")
    (tmp_path / "bin.jsonl").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(RecordError, match="cannot read"):
        read_records(tmp_path / "bin.jsonl")


def test_a_crash_mid_remember_resumes_where_it_stopped(db_path, embedder):
    many = [{"id": f"r{i}", "text": f"line number {i}"} for i in range(10)]

    class Crash(Exception):
        pass

    def stop_after_four(count, seen=[]):  # noqa: B006 - a counter across calls
        seen.append(count)
        if sum(seen) >= 4:
            raise Crash

    with MemoryGraph.open(db_path, embedder=embedder) as graph:
        with pytest.raises(Crash):
            graph.remember("notes", records(many), progress=stop_after_four)
        video = graph.resolve_video("notes").id
        assert len(graph.store.text_nodes(video)) == 4  # whole clips only
        report = graph.remember("notes", records(many))
        assert (report.added, report.already) == (6, 4)
        assert len(graph.store.text_nodes(video)) == 10
        assert np.all(np.diff([c.id for c in graph.clips(video)]) == 1)


def test_a_lesson_may_share_an_id_with_a_record_and_an_older_db_keeps_them_apart(db_path, embedder):
    import sqlite3

    with MemoryGraph.open(db_path, embedder=embedder) as graph:
        graph.remember("conv", records())
        lesson = [TextRecord("D1:1", "When the user asks about support groups, name the day")]
        first = graph.remember("conv", lesson, procedural=True)
        assert (first.added, first.already, first.changed) == (1, 0, [])  # not "already stored": another kind
        assert [ln["id"] for ln in graph.search("support group", lines=5, kinds=[NodeKind.PROCEDURAL]).lines] == ["D1:1"]
        again = graph.remember("conv", lesson, procedural=True)
        assert (again.added, again.already) == (0, 1)
    with sqlite3.connect(db_path) as conn:  # a DB from before the two namespaces: its lesson's key is bare
        conn.execute("DELETE FROM records WHERE record = 'D1:1'")  # (and it could not store a record of that id)
        conn.execute("UPDATE records SET record = substr(record, 2) WHERE substr(record, 1, 1) = char(31)")
        conn.execute("DELETE FROM meta WHERE key = 'record_kinds'")
    with MemoryGraph.open(db_path, embedder=embedder) as graph:
        assert (graph.remember("conv", lesson, procedural=True).already, graph.remember("conv", records()).added) == (1, 1)


def test_records_are_committed_in_bounded_batches_within_one_session(db_path, embedder):
    from m3agent.memory.text_sources import COMMIT_RECORDS

    many = [{"id": f"r{i}", "text": f"note {i}", "session": "s1"} for i in range(COMMIT_RECORDS * 2 + 10)]
    calls = []

    class Crash(Exception):
        pass

    def embed_then_crash(texts):
        calls.append(len(texts))
        if len(calls) == 2:
            raise Crash
        return embedder.embed(texts)

    with MemoryGraph.open(db_path, embedder=embedder) as graph:
        graph.remember("notes", records(many[:1]))  # the source exists; then one session of 522 records
        video = graph.resolve_video("notes").id
        from m3agent.memory.text_sources import remember_records

        with pytest.raises(Crash):
            remember_records(graph.store, graph.writer, embed_then_crash, "notes", records(many[1:]))
        assert calls[0] <= COMMIT_RECORDS
        kept = len(graph.store.text_nodes(video))
        assert 1 < kept <= 1 + COMMIT_RECORDS  # the first batch is on disk although the run died
        report = graph.remember("notes", records(many))
        assert report.already == kept and report.added == len(many) - kept
        assert {n.clip for n in graph.store.text_nodes(video)} == {0}  # one session, one clip


def test_text_that_is_not_text_or_too_long_is_a_skipped_line(tmp_path):
    from m3agent.memory.text_sources import MAX_RECORD_TEXT

    path = tmp_path / "r.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        fh.write(json.dumps(CHAT[0]) + "\n")
        fh.write('{"id": "s", "text": "a lone \\ud800 surrogate"}\n')
        fh.write(json.dumps({"id": "big", "text": "x" * (MAX_RECORD_TEXT + 1)}) + "\n")
        fh.write('{"id": "endless", "text": "' + "y" * (9 * MAX_RECORD_TEXT) + '"}\n')
        fh.write(json.dumps({"id": "esc\x1b[2J", "text": "hi"}) + "\n")
        fh.write(json.dumps(CHAT[1]) + "\n")
    found, problems = read_records(path)
    assert [r.id for r in found] == [CHAT[0]["id"], CHAT[1]["id"]]
    reasons = dict(problems)
    assert "lone surrogate" in reasons[2] and "split it" in reasons[3] and "longer than" in reasons[4]
    assert "control character" in reasons[5]
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert [r.id for r in read_records(bom)[0]] == [CHAT[0]["id"], CHAT[1]["id"]]  # the first record too
    utf16 = tmp_path / "u16.jsonl"
    utf16.write_bytes(path.read_text(encoding="utf-8").encode("utf-16"))
    assert [r.id for r in read_records(utf16)[0]] == [CHAT[0]["id"], CHAT[1]["id"]]


def test_a_record_that_states_a_name_names_the_character_as_of_its_session(db_path, embedder):
    recs = [TextRecord("a", 'At 00:05 <character_2> says: "I mend nets."', session="0"),
            TextRecord("b", "<character_2>'s name is Olga", session="1"),
            TextRecord("c", "Olga said her name is Olga twice", session="1")]  # not a name statement
    with MemoryGraph.open(db_path, embedder=embedder) as graph:
        graph.remember("harbour", recs)
        video = graph.resolve_video("harbour").id
        assert graph.names(video) == {2: "Olga"}  # a text source's episodic line, read like a video's semantic one
        assert graph.names(video, before_clip=0) == {}  # not yet said in session 0


def test_gated_lessons_are_only_those_about_the_question(kitchen):
    import dataclasses

    own = 'Asked "Is the fridge full?", the answer "Yes." was wrong; the user corrected it: "No, it is empty.".'
    other = 'Asked "Who plays guitar on the sofa?", the answer "Alice." was wrong; the user corrected it: "Bob.".'
    for text in (own, other):
        kitchen.remember_lesson(kitchen.video, 1, text)
    question = "Is the fridge full?"
    assert set(kitchen.lessons(kitchen.video, question, 3)) == {own, other}  # the nearest, whatever they ask
    scores = {line["text"]: line["score"]
              for line in kitchen.search(question, lines=5, kinds=[NodeKind.PROCEDURAL]).lines}
    assert scores[own] >= kitchen.lesson_threshold > scores[other]
    assert kitchen.lessons(kitchen.video, question, 3, gated=True) == [own]
    assert kitchen.lessons(kitchen.video, question, 3, gated=True, before_clip=0) == []  # learned at clip 1
    assert kitchen.lessons(kitchen.video, "Which plants need water?", 3, gated=True) == []

    kitchen.config = dataclasses.replace(kitchen.config, search=dataclasses.replace(
        kitchen.config.search, lesson_threshold=float(min(scores.values())) - 0.01))  # memory.search.lesson_threshold
    assert kitchen.lesson_threshold < scores[other]
    assert set(kitchen.lessons(kitchen.video, question, 3, gated=True)) == {own, other}
