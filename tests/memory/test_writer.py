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
