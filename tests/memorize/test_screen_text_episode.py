"""The on-screen text fixture memorized by the embedded stack: signs, a slide and a caption reach their clips,
search finds them, the channel mark is one line, the burned-in subtitle is left to speech; resume keeps it so."""

import json

import pytest

from m3agent.samples.screen_text import build_text_episode
from tests.memorize.test_pipeline import _Crash, memorize, stack  # noqa: F401  (the session's model stack)

pytestmark = pytest.mark.models


@pytest.fixture(scope="module")
def text_video(tmp_path_factory):
    path = tmp_path_factory.mktemp("text_episode") / "text_episode.mp4"
    build_text_episode(path)
    return path


@pytest.fixture(scope="module")
def text_graph(text_video, stack, tmp_path_factory):  # noqa: F811
    db = tmp_path_factory.mktemp("tm") / "text.db"
    graph, report = memorize(text_video, db, stack, log_path=str(db) + ".log")
    graph.log = [json.loads(line) for line in open(str(db) + ".log")]
    yield graph
    graph.close()


def live_text_lines(graph):
    return {n.text: n.clip for n in graph.live_lines(1).values() if n.text.startswith("The text")}


def test_texts_reach_their_clips(text_graph):
    lines = live_text_lines(text_graph)
    assert lines['The text "LIBRARY" is on screen from 00:00 to 00:14.'] == 0
    assert {text for text, clip in lines.items() if clip == 0 and "Revenue up 12 percent" in text}
    assert {text for text, clip in lines.items() if clip == 1 and "Marble Plaza" in text}
    assert not [text for text in lines if "lentil stew" in text]  # said aloud: the speech line has it
    assert [text for text in lines if '"CH7"' in text] == ['The text "CH7" is on screen from 00:00 to 00:59.']
    scenes = [n.text for n in text_graph.live_lines(1).values() if n.text.startswith("The scene changes")]
    assert "The scene changes at 00:15." in scenes


def test_the_log_says_what_was_read(text_graph):
    first = text_graph.log[0]
    assert first["texts"] >= 3 and first["text_reads"]["key_frames"] == 2  # the sign's shot and the slide's
    assert all(row["text_reads"]["unread"] == 0 for row in text_graph.log)  # nothing here reaches the caps


@pytest.mark.parametrize("query, clip", [("Marble Plaza", 1), ("library", 0), ("revenue percent", 0)])
def test_search_finds_the_clip_that_shows_it(text_graph, query, clip):
    result = text_graph.search(query, top_k=2)
    assert result.clips and result.clips[0].id == clip


def test_a_resumed_run_continues_the_mark(text_video, stack, tmp_path):  # noqa: F811
    db = tmp_path / "resume.db"
    with pytest.raises(KeyboardInterrupt):
        memorize(text_video, db, stack, memorizer=_Crash(stack[2], 1))
    graph, _ = memorize(text_video, db, stack)
    assert [t for t in live_text_lines(graph) if '"CH7"' in t] == ['The text "CH7" is on screen from 00:00 to 00:59.']
    graph.close()
