"""Reading benchmark annotations: the real M3-Bench files counted per type, the before_clip rule, VideoMME."""

import json
from collections import Counter

import pytest

from m3agent.eval.annotations import (
    M3_TYPES,
    AnnotationError,
    asked_early,
    before_clip_at,
    read_annotations,
    timed,
    timestamp_seconds,
)
from tests.data import M3BENCH

# counted by hand from the files (a question counts once for each of its types); "Multi-Detail Reasoning"
# in robot.json is the paper's "Multi-Evidence Reasoning"
ROBOT = {"Multi-Evidence Reasoning": 842, "Person Understanding": 548, "Cross-Modal Reasoning": 476,
         "General Knowledge Extraction": 327, "Multi-Hop Reasoning": 85}
WEB = {"Person Understanding": 1301, "General Knowledge Extraction": 972, "Multi-Evidence Reasoning": 968,
       "Multi-Hop Reasoning": 457, "Cross-Modal Reasoning": 424}


@pytest.mark.parametrize("name, questions, videos, types", [("robot.json", 1276, 100, ROBOT), ("web.json", 3214, 920, WEB)])
def test_real_annotation_files_are_counted_per_type(name, questions, videos, types):
    items = read_annotations(M3BENCH / name)
    assert len(items) == questions and len({i.video for i in items}) == videos
    assert Counter(t for i in items for t in i.types) == types
    assert set(types) == set(M3_TYPES) and not any(i.problem for i in items)
    assert len({i.id for i in items}) == questions


def test_robot_before_clip_comes_from_the_timestamp_and_agrees_with_the_file():
    raw = json.loads((M3BENCH / "robot.json").read_text())
    stated = {qa["question_id"]: qa["before_clip"] for v in raw.values() for qa in v["qa_list"]}
    items = read_annotations(M3BENCH / "robot.json")
    assert all(i.before_clip == stated[i.id] == timestamp_seconds(i.timestamp) // 30 - 1 for i in items)
    first = items[0]
    assert (first.id, first.timestamp, first.before_clip) == ("living_room_06_Q01", "00:43", 0)
    assert first.mem_path.endswith("living_room_06.pkl")


def test_web_questions_see_every_clip():
    items = read_annotations(M3BENCH / "web.json")
    assert all(i.before_clip is None and i.timestamp is None for i in items)


@pytest.mark.parametrize("stamp, seconds, clip", [("00:30", 30, 0), ("00:59", 59, 0), ("01:00", 60, 1),
                                                  ("01:02:03", 3723, 123), ("12:00.5", 720.5, 23), ("00:29", 29, -1)])
def test_before_clip_rule(stamp, seconds, clip):
    assert timestamp_seconds(stamp) == seconds and before_clip_at(seconds) == clip


def _m3(tmp_path, qa_list, name="a.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"v1": {"video_path": "videos/v1.mp4", "mem_path": "m/v1.pkl", "qa_list": qa_list}}))
    return path


def test_bad_questions_keep_their_reason_and_the_rest_is_read(tmp_path):
    path = _m3(tmp_path, [
        {"question": "Early?", "answer": "x", "question_id": "q1", "timestamp": "00:12", "type": ["Person Understanding"]},
        {"question": "Odd time?", "answer": "x", "question_id": "q2", "timestamp": "soon", "type": []},
        {"question": "", "answer": "x", "question_id": "q3"},
        {"question": "Fine?", "answer": "yes", "question_id": "q4", "before_clip": 3, "type": "Multi-Detail Reasoning"},
    ])
    q1, q2, q3, q4 = read_annotations(path)
    assert "before the first 30-second clip ends" in q1.problem
    assert "not MM:SS" in q2.problem and "no question text" in q3.problem
    assert not q4.problem and q4.before_clip == 3 and q4.types == ("Multi-Evidence Reasoning",)



def test_a_memorys_own_clip_length_counts_the_clips_again(tmp_path):
    path = _m3(tmp_path, [
        {"question": "Early?", "answer": "x", "question_id": "q1", "timestamp": "00:12"},
        {"question": "", "answer": "x", "question_id": "q2", "timestamp": "00:12"},
        {"question": "Later?", "answer": "x", "question_id": "q3", "timestamp": "01:05"},
        {"question": "Odd time?", "answer": "x", "question_id": "q4", "timestamp": "soon"},
        {"question": "Given?", "answer": "x", "question_id": "q5", "before_clip": 3},
    ])
    q1, q2, q3, q4, q5 = read_annotations(path)  # 30-second clips
    assert asked_early(q1) and not asked_early(q2) and not asked_early(q3) and not asked_early(q4)
    ten = timed(q1, 10.0)
    assert (ten.before_clip, ten.problem) == (0, "") and timed(ten, 30.0) == q1  # and back
    assert timed(q2, 10.0).problem == "the annotation has no question text" and timed(q2, 10.0).before_clip == 0
    assert timed(q3, 10.0).before_clip == 5 and q3.before_clip == 1 and timed(q3, 30.0) is q3
    assert timed(q4, 10.0) is q4 and timed(q5, 10.0) is q5  # no readable time: nothing to count again
    assert "before the first 90-second clip ends" in timed(q3, 90.0).problem and timed(q3, 90.0).before_clip == -1

def test_evidence_sidecar_is_read_beside_the_file(tmp_path):
    path = _m3(tmp_path, [{"question": "Where?", "answer": "x", "question_id": "q1", "type": []}])
    (tmp_path / "a.evidence.json").write_text(json.dumps({"q1": [2, 3]}))
    assert read_annotations(path)[0].evidence == (2, 3)
    (tmp_path / "a.evidence.json").write_text(json.dumps({"q1": "two"}))
    with pytest.raises(AnnotationError, match="question_id"):
        read_annotations(path)


@pytest.mark.parametrize("content, message", [
    ("not json at all", "neither a JSON file nor JSON lines"),
    (json.dumps({"v": {"video_path": "x"}}), "has no qa_list"),
    (json.dumps({"v": {"qa_list": [{"question": "a", "answer": "b", "question_id": "same"},
                                   {"question": "c", "answer": "d", "question_id": "same"}]}}), "appears twice"),
])
def test_unreadable_files_are_one_clear_error(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(AnnotationError, match=message):
        read_annotations(path)
    with pytest.raises(AnnotationError, match="cannot read"):
        read_annotations(tmp_path / "missing.json")


def test_videomme_multiple_choice_in_its_shapes(tmp_path):
    records = [
        {"video_id": "001", "videoID": "fFjv93ACGo8", "duration": "long", "question_id": "001-1",
         "task_type": "Counting Problem", "question": "How many people appear?",
         "options": ["A. One.", "B. Two.", "C. Three.", "D. Four."], "answer": "C"},
        {"video_id": "002", "question_id": "002-1", "task_type": "Object Recognition", "question": "What is held?",
         "options": {"A": "A cup", "B": "A pen", "C": "A phone", "D": "A key"}, "answer": "b"},
        {"video_id": "003", "question_id": "003-1", "question": "Which?", "options": ["red", "blue"], "answer": "E"},
    ]
    path = tmp_path / "videomme.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records))
    first, second, third = read_annotations(path)
    assert first.multiple_choice and first.video == "fFjv93ACGo8" and first.reference == "C"
    assert first.options[2] == "C. Three." and first.types == ("Counting Problem",) and first.duration == "long"
    assert second.options == ("A. A cup", "B. A pen", "C. A phone", "D. A key") and second.reference == "B"
    assert third.options == ("A. red", "B. blue") and "not one of the option letters" in third.problem
    listed = tmp_path / "videomme.json"
    listed.write_text(json.dumps(records[:2]))
    assert [i.id for i in read_annotations(listed)] == ["001-1", "002-1"]
