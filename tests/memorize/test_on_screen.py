"""Lines for on-screen text and scene changes: subtitles left to speech, texts continued across clips."""

import numpy as np

from m3agent.media.clips import MediaClip
from m3agent.memorize.grounded import GroundedMemorizer
from m3agent.memorize.on_screen import continue_texts, parse_screen_text_line, screen_text_line
from m3agent.perception.pipeline import ClipPerception, Utterance
from m3agent.perception.screen_text import ScreenText
from m3agent.perception.shots import Shot


def perception(texts, utterances=(), shots=()):
    times = [30.0 + i for i in range(30)]
    clip = MediaClip(1, 30.0, 60.0, [np.zeros((4, 4, 3), np.uint8)] * 30, times)
    return ClipPerception(clip, utterances=list(utterances), shots=list(shots), texts=list(texts))


def test_text_and_scene_lines_leave_subtitles_to_speech():
    subtitle = ScreenText("Tonight we cook fish with rice.", 45.0, 52.0, (0, 600, 900, 660), 0.98)
    sign = ScreenText('The "BLUE" door', 30.0, 59.0, (40, 40, 300, 100), 0.99)
    flash = ScreenText("SALE", 41.0, 41.0, (0, 0, 10, 10), 0.9)
    p = perception([sign, flash, subtitle], [Utterance(45.5, 48.0, "Tonight we cook fish with rice.")],
                   [Shot(0, 14, 30.0, 44.0), Shot(15, 29, 45.0, 59.0)])
    lines = GroundedMemorizer().describe(p, [], []).episodic
    assert "The scene changes at 00:45." in lines
    assert "The text \"The 'BLUE' door\" is on screen from 00:30 to 00:59." in lines
    assert 'The text "SALE" appears on screen at 00:41.' in lines
    assert not [line for line in lines if line.startswith('The text "Tonight')]


def test_a_text_on_screen_at_the_end_of_the_clip_before_continues_its_line():
    logo, later = ScreenText("CH7", 30.0, 59.0, (0, 0, 9, 9), 0.9), ScreenText("EXIT", 40.0, 50.0, (0, 0, 9, 9), 0.9)
    gone = ScreenText("Old sign", 30.0, 35.0, (0, 0, 9, 9), 0.9)
    p = perception([logo, later, gone])
    before = [(7, screen_text_line("CH7", 2.0, 29.0)), (8, screen_text_line("EXIT", 0.0, 29.0)),
              (9, screen_text_line("Old sign", 3.0, 12.0)), (10, "At 00:05 <voice_1> says: \"CH7\"")]
    continue_texts(p, before, 30.0)
    assert (logo.since, logo.replaces) == (2.0, 7)
    assert later.replaces is None  # it came back later in the clip: a new stretch
    assert gone.replaces is None  # its line ended long before the clip did
    assert GroundedMemorizer().describe(p, [], []).episodic[-3] == 'The text "CH7" is on screen from 00:02 to 00:59.'


def test_lines_parse_back():
    assert parse_screen_text_line(screen_text_line("Room 4", 61.0, 3725.0)) == ("Room 4", 61.0, 3725.0)
    assert parse_screen_text_line(screen_text_line("x", 5.0, 5.2)) == ("x", 5.0, 5.0)
    assert parse_screen_text_line("The scene changes at 00:45.") is None
