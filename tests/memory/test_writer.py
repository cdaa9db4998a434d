"""Which stored video a memorization writes to: identified by content, never by file name alone."""

import pytest

from m3agent.memory.writer import VideoMismatchError


def claim(graph, name, fingerprint, name_given=False, path=None, duration=60.0):
    return graph.claim_video(name, fingerprint, name_given=name_given, path=path or f"/videos/{fingerprint}/{name}",
                             duration=duration)


def test_same_content_resumes_even_when_moved_or_renamed(kitchen):
    first = claim(kitchen, "episode.mp4", "aaaa")
    assert claim(kitchen, "episode.mp4", "aaaa") == first
    assert claim(kitchen, "renamed.mp4", "aaaa", path="/elsewhere/renamed.mp4") == first  # moved and renamed
    assert kitchen.resolve_video(first).name == "episode.mp4"
    assert kitchen.resolve_video(first).path == "/elsewhere/renamed.mp4"


def test_other_content_with_the_same_name_is_a_new_video(kitchen, caplog):
    first = claim(kitchen, "episode.mp4", "aaaa", duration=60.0)
    with kitchen.clip(first, 0, 0, 30) as b:
        b.episodic("the first episode's first clip")
    second = claim(kitchen, "episode.mp4", "bbbb", duration=90.0)
    assert second != first
    assert kitchen.resolve_video(second).name == "episode.mp4 (2)"
    assert "already holds another video named 'episode.mp4'" in caplog.text
    stored = kitchen.resolve_video(first)
    assert (stored.path, stored.duration) == ("/videos/aaaa/episode.mp4", 60.0)  # not overwritten
    assert kitchen.clips(second) == []  # nothing of the other video counts as done
    assert claim(kitchen, "episode.mp4", "bbbb") == second  # and it resumes as itself


def test_a_chosen_name_taken_by_other_content_is_refused(kitchen):
    claim(kitchen, "talk", "aaaa", name_given=True, path="/a/talk.mp4")
    with pytest.raises(VideoMismatchError, match=r"already holds a different video named 'talk' \(from /a/talk.mp4\)"):
        claim(kitchen, "talk", "bbbb", name_given=True, path="/b/talk.mp4")


def test_videos_stored_before_fingerprints_match_by_path_and_duration(kitchen):
    video = kitchen.video  # "kitchen", path kitchen.mp4, 120 s, no fingerprint
    assert claim(kitchen, "kitchen", "cccc", path="kitchen.mp4", duration=120.0) == video
    assert kitchen.store.video_meta(video)["fingerprint"] == "cccc"  # recorded from now on
    assert claim(kitchen, "kitchen", "dddd", path="kitchen.mp4", duration=120.0) != video


def test_a_voice_found_twice_folds_into_one_and_its_tags_still_resolve(kitchen, db_path, embedder):
    from m3agent.config import MemoryConfig
    from m3agent.memory import MemoryGraph
    from tests.conftest import rand_vec

    video, alice = kitchen.video, kitchen.ids["alice_voice"]
    with kitchen.clip(video, 4, 120, 150) as b:
        again = b.voice([rand_vec(5, 256), rand_vec(6, 256)], segments=[(121.0, 124.0, "the soup is ready")])
        b.episodic(f'At 02:01 <voice_{again}> says: "the soup is ready"')
        b.semantic(f"<voice_{again}> likes soup")
    kept = kitchen.fold_entities([(again, alice)], at_clip=4)
    assert kept[alice].shape == (3, 256)  # the best of both nodes' evidence (here: all of it)
    cmap = kitchen.characters(video)
    character = cmap.character_of(alice)
    assert cmap.character_of(again) == character and again not in cmap.members[character]
    assert cmap.translate(f"<voice_{again}> likes soup") == f"<character_{character}> likes soup"
    assert cmap.entity_ids(f"<voice_{again}>") == [alice]
    exported = kitchen.export(video)
    voices = [n for n in exported["nodes"] if n["kind"] == "voice"]
    assert [v["id"] for v in voices] == [alice]
    assert {s["text"] for s in voices[0]["segments"]} == {"hi I am Alice", "the soup is ready"}
    assert kitchen.store.texts_linked_to([again]) == []
    soup = [n for n in exported["nodes"] if n["text"] == f"<voice_{again}> likes soup"]
    assert soup[0]["entities"] == [alice]
    kitchen.close()
    reopened = MemoryGraph.open(db_path, MemoryConfig(), embedder=embedder)  # the fold is stored
    assert reopened.characters(video).character_of(again) == character
    assert reopened.names(video)[character] == "Alice"
    reopened.forget(video, "Alice")
    assert reopened.store.merged_entities(video) == {}
    assert "voice_" + str(again) not in str(reopened.export(video))
    reopened.close()


def test_folding_refuses_nodes_of_different_kinds(kitchen):
    with pytest.raises(ValueError, match="not two stored entities of one kind"):
        kitchen.fold_entities([(kitchen.ids["alice_voice"], kitchen.ids["bob_face"])], at_clip=3)


def test_a_fold_keeps_its_evidence_and_characters_explain_shows_it(kitchen, db_path, capsys):
    import json

    from m3agent.cli import main
    from tests.conftest import rand_vec

    video, alice = kitchen.video, kitchen.ids["alice_voice"]
    with kitchen.clip(video, 4, 120, 150) as b:
        again = b.voice([rand_vec(5, 256)], segments=[(121.0, 124.0, "the soup is ready")])
    evidence = {"cosine": 0.71, "needed": 0.6, "faces": [[1], [1]], "clips": [[0], [4]], "names": [["Alice"], []]}
    kitchen.fold_entities([(again, alice)], at_clip=4, evidence={again: evidence})
    assert kitchen.folds(video) == [{"gone": again, "into": alice, "clip": 4, "evidence": evidence}]
    kitchen.close()
    assert main(["characters", str(db_path), "--explain"]) == 0
    cards = json.loads(capsys.readouterr().out)
    alice_card = next(c for c in cards if f"voice_{alice}" in c["members"])
    assert alice_card["folds"][0]["evidence"]["cosine"] == 0.71
    assert all(c["folds"] == [] for c in cards if c is not alice_card)
