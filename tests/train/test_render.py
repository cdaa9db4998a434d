"""Synthetic worlds rendered the ways the package reads them: M3-Bench annotations with evidence, a text memory
whose clips are the video's, train-data rows, and (with the real models) a video memorized by the pipeline."""

import dataclasses
import json
import math

import pytest

from m3agent.config import Config
from m3agent.eval.annotations import M3_TYPES, read_annotations, timestamp_seconds
from m3agent.factory import open_memory
from m3agent.train.dataset import convert
from m3agent.train.render import (
    VOICES,
    annotations,
    evidence,
    follow_ups,
    records,
    scenes,
    speaker_labels,
    worked,
)
from m3agent.train.world_data import (
    ANNOTATIONS,
    EVIDENCE,
    QUERIES,
    SCRIPTS,
    WORKED,
    photo_identities,
    remember_world,
    write_worlds,
)
from m3agent.train.worlds import (
    BEFORE_CHANGE,
    VOICE_KEYS,
    Line,
    clip_of,
    generate_world,
    generate_worlds,
)
from tests.data import FACES, M3BENCH


def hashing_config() -> Config:
    """Config with the tests' hashing embedder (512 dims) as the configured one."""
    config = Config()
    return dataclasses.replace(config, embedder=dataclasses.replace(config.embedder, backend="hashing", model="512"))


def test_annotations_have_the_exact_robot_schema():
    real = json.loads((M3BENCH / "robot.json").read_text())
    real_video = next(iter(real.values()))
    real_qa = real_video["qa_list"][0]
    worlds = generate_worlds(20, 1)
    data = annotations(worlds)
    assert list(data) == [w.id for w in worlds]
    for world in worlds:
        entry = data[world.id]
        assert entry.keys() == real_video.keys() and len(entry["qa_list"]) == len(world.asks)
        for qa, ask in zip(entry["qa_list"], world.asks):
            assert qa.keys() == real_qa.keys()
            assert all(type(qa[k]) is type(real_qa[k]) for k in qa)
            seconds = timestamp_seconds(qa["timestamp"])
            assert seconds == world.asked_at(ask)
            assert qa["before_clip"] == math.floor(seconds / 30) - 1 == world.before_clip(ask) >= 0
            assert all(f"scene {s} at" in qa["reasoning"] and world.scenes[s].text in qa["reasoning"]
                       for s in ask.scenes)
    ids = [qa["question_id"] for entry in data.values() for qa in entry["qa_list"]]
    assert len(set(ids)) == len(ids) and set(evidence(worlds)) == set(ids)


def test_annotations_read_back_through_the_benchmark_reader(tmp_path):
    worlds = generate_worlds(10, 2)
    (tmp_path / "worlds.json").write_text(json.dumps(annotations(worlds)))
    (tmp_path / "worlds.evidence.json").write_text(json.dumps(evidence(worlds)))
    items = read_annotations(tmp_path / "worlds.json")
    assert len(items) == sum(len(w.asks) for w in worlds) and not any(i.problem for i in items)
    assert {t for i in items for t in i.types} == set(M3_TYPES)
    by_id = {i.id: i for i in items}
    for world in worlds:
        for number, ask in enumerate(world.asks, 1):
            item = by_id[f"{world.id}_Q{number:02d}"]
            assert item.video == world.id and item.reference == ask.answer and item.question == ask.question
            assert item.before_clip == world.before_clip(ask)
            assert item.evidence == tuple(sorted({clip_of(s) for s in ask.scenes}))
            assert max(item.evidence) <= item.before_clip
    early = [i for i in items if i.before_clip < len(generate_world(2, 0).scenes)]  # asked before the end
    assert early


def showing_text():
    """The first world of seed 3 from index 4 on that shows text on screen (most do)."""
    return next(w for w in (generate_world(3, i) for i in range(4, 40)) if w.shown)


def test_records_are_the_spoken_scenes_as_the_memorizer_writes_speech_in_their_clips_sessions():
    from m3agent.memorize.grounded import stated_names

    world = showing_text()
    recs = records(world)
    spoken = [line for line in world.scenes if line.speaker]
    labels = speaker_labels(world)
    said = [r for r in recs if " says: " in r.text]
    assert [r.text for r in said] == [f'At {line.scene * 15 // 60:02d}:{line.scene * 15 % 60:02d} '
                                      f'{labels[line.speaker]} says: "{line.text}"' for line in spoken]
    assert [r.session for r in said] == [str(line.scene // 2) for line in spoken]
    clock = lambda seconds: f"{seconds // 60:02d}:{seconds % 60:02d}"  # noqa: E731
    on_screen = [r for r in recs if r.text.startswith("<character_") and " is on screen from " in r.text]
    assert [(r.text, r.session) for r in on_screen] == [
        (f"{labels[line.speaker]} is on screen from {clock(line.scene * 15)} to {clock(line.scene * 15 + 14)}.",
         str(line.scene // 2)) for line in spoken]  # as the memorizer writes a face's time on screen
    written = [r for r in recs if r.text.startswith(("The text ", "The scene changes at "))]
    named = [r.text for r in recs if " says: " not in r.text and r not in on_screen and r not in written]
    assert named == [f"{labels[line.speaker]}'s name is {name}" for line in spoken for name in stated_names(line.text)]
    assert len(named) >= len(world.people)  # every intro gives a name the memorizer reads
    first = world.index % 5
    assert sorted(labels.values()) == sorted(f"<character_{n}>" for n in range(first, first + len(world.people)))
    assert not any(p.name in label for label in labels.values() for p in world.people)
    assert len({r.id for r in recs}) == len(recs)
    cuts = [(r.text, r.session) for r in written if r.text.startswith("The scene changes")]
    assert cuts == [(f"The scene changes at {clock(s * 15)}.", str(s // 2)) for s in range(1, len(world.scenes), 2)]
    texts = [(r.text, r.session) for r in written if r.text.startswith("The text ")]
    shown = [(f'The text "{row}" is on screen from {clock(s.scene * 15)} to {clock(s.scene * 15 + 14)}.',
              str(s.scene // 2)) for s in world.shown if s.where != "mark" for row in s.text.split("\n")]
    marks = [(f'The text "{s.text}" is on screen from 00:00 to {clock(len(world.scenes) * 15 - 1)}.',
              str(world.clips - 1)) for s in world.shown if s.where == "mark"]  # written once, with its span
    assert sorted(texts) == sorted(shown + marks) and shown
    silent = dataclasses.replace(world, scenes=tuple(Line(line.scene, None, "") if line.scene in (2, 3) else line
                                                     for line in world.scenes))
    with pytest.raises(ValueError, match="no spoken scene"):
        records(silent)


def test_the_training_worlds_write_a_scene_in_the_memorizers_order():
    """The text memory the control model trains on lists each scene's lines in the order the memorizer writes a
    video's lines of one second: who is on screen, a cut, text, then speech (and the names it gives)."""
    rank = {"screen": 0, "cut": 1, "text": 2, "says": 3, "name": 4}
    for world in generate_worlds(3, 5):
        scenes: dict[str, list[int]] = {}
        for record in records(world):
            scene, _, part = record.id.partition("/scene-")[2].partition("/")
            if not scene:
                continue  # a mark on screen all along, written once
            scenes.setdefault(scene, []).append(rank[part.split("-")[0] if part else "says"])
        assert scenes and all(kinds == sorted(kinds) for kinds in scenes.values()), scenes
        assert {k for kinds in scenes.values() for k in kinds} >= {0, 3}


def test_records_become_a_memory_whose_clips_are_the_videos(tmp_path, embedder):
    config = Config()
    world = showing_text()
    db = tmp_path / f"{world.id}.db"
    report = remember_world(world, db, config, embedder=embedder)
    assert report["added"] == len(records(world)) and report["clips"] == world.clips
    assert remember_world(world, db, config, embedder=embedder)["added"] == 0  # a second run adds nothing
    with open_memory(db, config, embedder=embedder) as graph:
        (video,) = graph.videos()
        assert video.name == world.id and video.clip_seconds == 30
        assert [(c.id, c.start, c.end) for c in graph.clips(video.id)] == [(k, 30.0 * k, 30.0 * k + 30)
                                                                           for k in range(world.clips)]
        lines = graph.export(video.id)["nodes"]
        texts = [n["text"] for n in lines if n["kind"] == "episodic"]
        assert len(texts) == len(records(world))
        assert all(t.startswith(("At ", "<character_", "The text ", "The scene changes at ")) for t in texts)
        assert any(a.kind.startswith("text-") for a in world.asks)
        for ask in world.asks:
            if ask.kind not in (BEFORE_CHANGE, "location-now", "advice") and not ask.kind.startswith("text-"):
                continue
            hits = graph.search(ask.question, video=video.id, before_clip=world.before_clip(ask))
            assert hits.clips and max(c.id for c in hits.clips) <= world.before_clip(ask)
            found = {c.id for c in hits.clips if any(ask.answer.rstrip(".").lower() in ln.lower() for ln in c.lines)}
            assert found & {clip_of(s) for s in ask.scenes}, (ask, hits.to_dict())
        before = next(a for a in world.asks if a.kind == BEFORE_CHANGE)
        hidden = graph.search(before.question, video=video.id, before_clip=world.before_clip(before))
        moved = next(line for line in world.scenes if "move" in line.facts)
        assert not any(moved.text in ln for c in hidden.clips for ln in c.lines)  # the move is not seen yet


def test_write_worlds_text_feeds_train_data_without_skips(tmp_path):
    config = hashing_config()
    summary = write_worlds(tmp_path / "set", 3, 9, config, progress=False)
    worlds = generate_worlds(3, 9)
    questions = sum(len(w.asks) for w in worlds)
    assert summary["worlds"] == 3 and summary["questions"] == questions and summary["memories_built"] == 3
    assert set(summary["questions_per_type"]) == set(M3_TYPES) and all(summary["questions_per_type"].values())
    assert summary["before_change"] == 3 and summary["seconds"] > 0
    out = tmp_path / "set"
    assert json.loads((out / ANNOTATIONS).read_text()) == annotations(worlds)
    assert json.loads((out / EVIDENCE).read_text()) == evidence(worlds)
    workings = json.loads((out / WORKED).read_text())
    assert workings == worked(worlds) and len(workings) == 3  # each world's total, with its sum written out
    assert json.loads((out / QUERIES).read_text()) == follow_ups(worlds)
    assert json.loads((out / SCRIPTS).read_text())[worlds[0].id] == json.loads(json.dumps(worlds[0].to_dict()))
    assert sorted(p.name for p in (out / "memories").glob("*.db")) == sorted(f"{w.id}.db" for w in worlds)
    items = read_annotations(out / ANNOTATIONS)
    result = convert(items, out / "memories", config, data_source="worlds/text", val_fraction=0.0, seed=0)
    assert not result.skipped and not result.problems and len(result.train) == questions
    rows = {r["extra_info"]["question_id"]: r for r in result.train}
    for item in items:
        extra = rows[item.id]["extra_info"]
        assert extra["video"] == item.video and extra["before_clip"] == item.before_clip
        assert rows[item.id]["reward_model"]["ground_truth"] == item.reference
        assert item.question in rows[item.id]["prompt"][-1]["content"]
    again = write_worlds(out, 3, 9, config, progress=False)
    assert (again["memories_built"], again["memories_kept"]) == (0, 3)


def test_write_worlds_refuses_an_unknown_render(tmp_path):
    with pytest.raises(ValueError, match="render"):
        write_worlds(tmp_path, 1, 0, hashing_config(), render="audio", progress=False)


def test_scenes_show_each_person_with_their_voice_for_15_seconds(tmp_path):
    assert set(VOICES) == {key for keys in VOICE_KEYS.values() for key in keys}
    assert len(set(VOICES.values())) == len(VOICES)
    world = next(w for w in generate_worlds(30, 4) if len(w.people) == 4 and not w.shown)
    photos = [["a1.jpg", "a2.jpg"], "b.jpg", ["c.jpg"]]  # three identities for four people
    out = scenes(world, photos)
    assert len(out) == len(world.scenes) and all(s.min_seconds == 15 for s in out)
    for scene, line in zip(out, world.scenes):
        assert scene.text == line.text and scene.person == line.speaker
        if line.speaker is None:
            assert scene.image is None and scene.voice is None
            continue
        person = world.person(line.speaker)
        assert scene.voice == VOICES[person.voice]
        if person.photo == 3:
            assert scene.image is None  # no photo left for them: an off-screen voice
        else:
            shown = photos[person.photo]
            assert scene.image in ([shown] if isinstance(shown, str) else shown)
    first = [s.image for s in out if s.person and world.person(s.person).photo == 0]
    assert first[:2] == ["a1.jpg", "a2.jpg"][: len(first[:2])]  # a person's photos in turn


def test_scenes_draw_the_text_a_world_shows(tmp_path):
    from PIL import Image

    world = next(w for w in generate_worlds(30, 4) if any(s.where == "slide" for s in w.shown))
    photos = photo_identities()
    with pytest.raises(ValueError, match="pictures"):
        scenes(world, photos)
    out = scenes(world, photos, tmp_path / "pictures")
    for scene, line in zip(out, world.scenes):
        if world.shown_in(line.scene):  # drawn into the folder: the speaker's photo or a white page, with the text
            assert scene.image == str(tmp_path / "pictures" / f"scene-{line.scene:02d}.png")
            with Image.open(scene.image) as image:
                assert image.size == (1280, 720)
        else:
            assert scene.image is None or scene.image in {p for group in photos for p in group}


def test_photo_identities_group_a_folder(tmp_path):
    bundled = photo_identities()
    assert len(bundled) == 3 and all(len(group) == 2 for group in bundled)
    (tmp_path / "ann").mkdir()
    for name in ("ann/x.jpg", "ann/y.png", "bob_1.jpg", "bob_2.jpg", "cy.png", "notes.txt"):
        (tmp_path / name).write_bytes(b"")
    groups = photo_identities(tmp_path)
    assert sorted(len(g) for g in groups) == [1, 2, 2] and any(g[0].endswith("cy.png") for g in groups)
    with pytest.raises(FileNotFoundError):
        photo_identities(tmp_path / "missing")


# ------------------------------------------------------------------------------------------------ real video
@pytest.mark.models
@pytest.mark.slow
def test_a_small_world_renders_into_a_video_the_pipeline_memorizes(tmp_path):
    """Two scenes of a world (one 30-second clip): photos and espeak-ng voices into an MP4 of exactly 30 s,
    memorized by the embedded models under the world's id, where a search finds what was said."""
    from m3agent.config import load_config
    from m3agent.factory import memorization_stack
    from m3agent.media import probe
    from m3agent.train.world_data import is_memorized, memorize_world, render_video

    world = next(w for w in (generate_world(5, i) for i in range(100))
                 if all("job" in line.facts for line in w.scenes[:2]))
    small = dataclasses.replace(world, scenes=world.scenes[:2], asks=())
    faces = [[str(FACES / "obama.jpg")], [str(FACES / "train_rose_leslie_img1.jpg")], [str(FACES / "biden.jpg")],
             [str(FACES / "alex-lacamoire.png")]]
    video = render_video(small, tmp_path / "videos", faces)
    assert abs(probe(video).duration - 30) < 0.5
    assert render_video(small, tmp_path / "videos", faces) == video  # a finished video is kept
    config = load_config()
    db = tmp_path / "memories" / f"{small.id}.db"
    db.parent.mkdir()
    assert not is_memorized(small, db, config)
    report = memorize_world(small, video, db, config, memorization_stack(config))
    assert report["clips_done"] >= 1 and is_memorized(small, db, config)
    job = world.person(small.scenes[0].speaker).job
    with open_memory(db, config, readonly=True) as graph:
        (stored,) = graph.videos()
        assert stored.name == small.id
        said = [n["text"] for n in graph.export(stored.id)["nodes"] if n["kind"] == "episodic" and "says" in n["text"]]
        assert len(said) >= 2
        hits = graph.search(f"works as {job}", video=stored.id)
        assert any(job.split()[-1] in line.lower() for c in hits.clips for line in c.lines), hits.to_dict()


def test_follow_ups_name_the_clips_of_the_second_hop_only():
    worlds = generate_worlds(40, 3)
    queries = follow_ups(worlds)
    assert len(queries) > 40  # most worlds ask more than one question of two hops
    for world in worlds:
        for number, ask in enumerate(world.asks, 1):
            held = queries.get(f"{world.id}_Q{number:02d}", {})
            later = {scene for scene, _ in ask.follow_ups}
            first = {clip_of(s) for s in ask.scenes if s not in later}
            assert set(held) == {str(clip_of(s)) for s in later} - {str(c) for c in first}, ask
            assert all(first - {int(c)} for c in held)  # a first hop is searched before any follow-up
