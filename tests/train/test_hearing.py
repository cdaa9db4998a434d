"""Training worlds as speech recognition hears them: espeak-ng voices laid on the world's timeline, recognised two
30-second clips a call, each scene's words stored in place of its script line."""

import dataclasses
import json

import numpy as np
import pytest

from m3agent.factory import open_memory
from m3agent.perception.asr.base import ASRBackend, Segment
from m3agent.train.hearing import SAMPLE_RATE, heard_lines
from m3agent.train.render import (
    VOICES,
    annotations,
    answer_heard,
    question_id,
    records,
    speaker_labels,
)
from m3agent.train.world_data import is_heard, write_worlds
from m3agent.train.worlds import BEFORE_CHANGE, Ask, Line, generate_world, generate_worlds
from tests.train.test_render import hashing_config


class WhereSpeechIs(ASRBackend):
    """Hears, in each 15-second half of a clip, the second its speech starts; keeps the clips it was given."""

    name = "where-speech-is"

    def __init__(self):
        self.calls: list[list[int]] = []

    def transcribe(self, audio, sample_rate=16_000):
        return self.transcribe_many([audio], sample_rate)[0]

    def transcribe_many(self, audios, sample_rate=16_000):
        self.calls.append([audio.size for audio in audios])
        out = []
        for audio in audios:
            segments = []
            for half in range(0, audio.size, 15 * sample_rate):
                loud = np.flatnonzero(np.abs(audio[half: half + 15 * sample_rate]) > 1e-3)
                if loud.size:
                    start, end = (half + loud[0]) / sample_rate, (half + loud[-1]) / sample_rate
                    segments.append(Segment(start, end, f"speech from {start % 15:.1f}"))
            out.append(segments)
        return out


def small_world():
    """A world's first four scenes (two clips), the third silent."""
    world = generate_world(3, 0)
    scenes = tuple(Line(line.scene, None, "") if line.scene == 2 else line for line in world.scenes[:4])
    return dataclasses.replace(world, scenes=scenes, asks=(), shown=())


def test_each_spoken_scene_is_heard_where_its_line_is_said_two_clips_a_call():
    world = small_world()
    asr = WhereSpeechIs()
    heard = heard_lines(world, asr, VOICES)
    assert asr.calls == [[30 * SAMPLE_RATE, 30 * SAMPLE_RATE]]  # both clips in one pass, as the perceiver does
    assert sorted(heard) == [0, 1, 3]  # the silent scene is heard as nothing
    for text in heard.values():
        assert text.startswith("speech from ") and 0.4 <= float(text.split()[-1]) <= 0.8  # 0.5 s into its scene


def test_records_store_the_heard_lines_and_read_names_from_them():
    world = small_world()
    first = world.scenes[0]
    heard = {0: "Hi, I'm Walda. I said something else.", 3: "Mumbled words."}
    recs = records(world, heard)
    labels = speaker_labels(world)
    said = [r.text for r in recs if " says: " in r.text]
    assert said == [f'At 00:00 {labels[first.speaker]} says: "Hi, I\'m Walda. I said something else."',
                    f'At 00:45 {labels[world.scenes[3].speaker]} says: "Mumbled words."']
    assert [r.text for r in recs if "'s name is " in r.text] == [f"{labels[first.speaker]}'s name is Walda"]
    on_screen = [r.text for r in recs if " is on screen from " in r.text]
    assert len(on_screen) == 3  # scene 1 was heard as nothing: its speaker is still on screen, no line is said


def test_a_question_whose_answer_the_hearing_lost_is_left_out():
    world = small_world()
    first = world.scenes[0]
    line = dataclasses.replace(first, text="I bought four plates at the market.")
    world = dataclasses.replace(world, scenes=(line, *world.scenes[1:]), asks=(
        Ask("What did they buy?", "Four plates.", ("multi-detail",), (0,)),
        Ask("How many plates in all?", "Seven.", ("multi-detail",), (0, 2), worked="4 + 3 = 7 plates."),
        Ask("What did the second speaker say?", world.scenes[1].text, ("multi-detail",), (1,))))
    plates, total, _ = world.asks
    assert answer_heard(world, plates, {0: "I bot four plate at the market."})  # half the words and the number
    assert not answer_heard(world, plates, {0: "I bought for plates at the market."})  # the number is lost
    assert not answer_heard(world, plates, {})  # heard as nothing
    assert answer_heard(world, total, {0: "I bought 4 plates."})  # a silent scene holds no part of the answer
    assert not answer_heard(world, total, {0: "I bought plates."})
    heard = {0: "I bought for plates.", 1: world.scenes[1].text}
    (qa,) = annotations([world], {world.id: heard})[world.id]["qa_list"]
    assert qa["question"] == "What did the second speaker say?" and qa["question_id"].endswith("_Q03")  # ids kept
    assert len(annotations([world], {})[world.id]["qa_list"]) == 3  # a world not heard keeps every question


def test_a_seeded_share_of_worlds_is_heard():
    worlds = generate_worlds(400, 11)
    picked = [is_heard(w, 0.5) for w in worlds]
    assert picked == [is_heard(w, 0.5) for w in worlds]
    assert 0.4 < sum(picked) / len(picked) < 0.6
    assert not any(is_heard(w, 0.0) for w in worlds) and all(is_heard(w, 1.0) for w in worlds)
    assert set(w.id for w, p in zip(worlds, picked) if p) <= set(w.id for w in worlds if is_heard(w, 0.8))


def test_write_worlds_stores_heard_worlds_through_the_configured_recogniser(tmp_path, monkeypatch):
    from m3agent.train import world_data

    monkeypatch.setattr(world_data, "build_asr", lambda config: WhereSpeechIs())
    config = hashing_config()
    summary = write_worlds(tmp_path / "set", 2, 9, config, hear=1.0, progress=False)
    assert summary["heard"] == 2 and summary["memories_built"] == 2
    asked = json.loads((tmp_path / "set" / "worlds.json").read_text("utf-8"))
    kept = sum(len(v["qa_list"]) for v in asked.values())
    assert kept == summary["questions"] and summary["lost_in_hearing"] > 0  # "speech from 0.5" holds no answer
    assert kept + summary["lost_in_hearing"] == sum(len(w.asks) for w in generate_worlds(2, 9))
    qas = [qa for v in asked.values() for qa in v["qa_list"]]  # the summary counts the questions it kept
    assert sum(summary["questions_per_type"].values()) == sum(len(qa["type"]) for qa in qas)
    kinds = {question_id(w, n): ask.kind for w in generate_worlds(2, 9) for n, ask in enumerate(w.asks, 1)}
    assert summary["before_change"] == sum(kinds[qa["question_id"]] == BEFORE_CHANGE for qa in qas)
    for world in generate_worlds(2, 9):
        with open_memory(tmp_path / "set" / "memories" / f"{world.id}.db", config, readonly=True) as graph:
            (video,) = graph.videos()
            said = [n["text"] for n in graph.export(video.id)["nodes"] if " says: " in (n["text"] or "")]
        assert said and all('says: "speech from 0.' in text for text in said)
    heard = tmp_path / "set" / "heard"
    assert sorted(p.stem for p in heard.glob("*.json")) == [w.id for w in generate_worlds(2, 9)]
    (tmp_path / "set" / "memories" / "world-9-00001.db").unlink()  # a run stopped mid-world resumes
    monkeypatch.setattr(world_data, "build_asr", lambda config: pytest.fail("heard again"))
    again = write_worlds(tmp_path / "set", 2, 9, config, hear=1.0, progress=False)
    assert (again["heard"], again["memories_built"], again["memories_kept"]) == (2, 1, 1)


def test_write_worlds_refuses_a_share_it_cannot_hear(tmp_path):
    with pytest.raises(ValueError, match="hear"):
        write_worlds(tmp_path, 1, 0, hashing_config(), hear=1.5, progress=False)
    with pytest.raises(ValueError, match="hear"):
        write_worlds(tmp_path, 1, 0, hashing_config(), render="video", hear=0.5, progress=False)


@pytest.mark.models
def test_the_bundled_recogniser_hears_most_of_each_line():
    """The real path: espeak-ng and the bundled Whisper tiny.en. Most words come through; not all do (the reason
    training worlds are heard at all)."""
    from m3agent.config import load_config
    from m3agent.factory import build_asr

    world = small_world()
    heard = heard_lines(world, build_asr(load_config().memorize.perception), VOICES)
    assert sorted(heard) == [0, 1, 3]
    for scene, text in heard.items():
        said = {w.strip(".,!?'").lower() for w in world.scenes[scene].text.split()}
        got = {w.strip(".,!?'").lower() for w in text.split()}
        assert len(said & got) >= 0.5 * len(said), (world.scenes[scene].text, text)
