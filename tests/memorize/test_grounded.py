import numpy as np

from m3agent.media.clips import MediaClip
from m3agent.media.clock import clock
from m3agent.memorize.grounded import GroundedMemorizer, stated_names
from m3agent.perception.faces.base import FaceDetection
from m3agent.perception.pipeline import ClipPerception, FaceTrack, Utterance, VoiceTrack


def det(i, t):
    return FaceDetection(i, t, (0, 0, 50, 50), 1.0, np.ones(128, np.float32), np.zeros((5, 5, 3), np.uint8))


def test_names_and_clock():
    assert stated_names("Hello, my name is David. I keep a bike.") == ["David"]
    assert stated_names("Hi, I'm Sarah. I'm Walter Redumbrella to the market.") == ["Sarah"]
    assert stated_names("I am going home and I am happy.") == []
    assert stated_names("MY NAME IS Anna Lee and") == ["Anna Lee"]
    assert clock(75.9) == "01:15" and clock(3725) == "1:02:05"


def test_visibility_speech_and_voted_equivalence():
    times = [30.0 + i for i in range(10)]
    clip = MediaClip(1, 30.0, 40.0, [np.zeros((4, 4, 3), np.uint8)] * 10, times)
    a = FaceTrack([det(i, times[i]) for i in range(0, 6)])  # frames 0-5
    b = FaceTrack([det(i, times[i]) for i in range(4, 10)])  # frames 4-9: both visible at 4-5
    u1 = Utterance(30.5, 33.5, "My name is Ada.", voice=0)  # only face a on screen
    u2 = Utterance(34.0, 35.5, "Both of us are here.", voice=0)  # two faces: no vote
    u3 = Utterance(36.5, 39.0, "I speak alone now.", voice=1)  # only face b
    u4 = Utterance(39.2, 39.6, "ok", voice=None)
    p = ClipPerception(clip, faces=[a, b], utterances=[u1, u2, u3, u4],
                       voices=[VoiceTrack([u1, u2]), VoiceTrack([u3])])
    lines = GroundedMemorizer().describe(p, [10, 11], [20, 21])
    assert "<face_10> is on screen from 00:30 to 00:35." in lines.episodic
    assert 'At 00:30 <voice_20> says: "My name is Ada."' in lines.episodic
    assert 'At 00:39 Someone says: "ok"' in lines.episodic
    assert sorted(lines.semantic) == ["<voice_20>'s name is Ada", "Equivalence: <face_10>, <voice_20>",
                                      "Equivalence: <face_11>, <voice_21>"]


def test_nobody_visible():
    clip = MediaClip(0, 0.0, 30.0, [np.zeros((4, 4, 3), np.uint8)], [0.0])
    lines = GroundedMemorizer().describe(ClipPerception(clip), [], [])
    assert lines.episodic == ["Nobody is visible between 00:00 and 00:30."] and lines.semantic == []


def test_faces_too_small_to_identify_are_counted_in_a_line_of_their_own():
    times = [0.0, 1.0, 2.0, 3.0]
    clip = MediaClip(0, 0.0, 30.0, [np.zeros((4, 4, 3), np.uint8)] * 4, times)

    def small(i):
        return FaceDetection(i, times[i], (0, 0, 20, 24), 0.95, np.zeros(0, np.float32), np.zeros((5, 5, 3), np.uint8))

    alone = ClipPerception(clip, small_faces=[small(1), small(2), small(2)])
    lines = GroundedMemorizer().describe(alone, [], [])
    assert lines.episodic == ["2 faces too small to identify are on screen from 00:01 to 00:02."]  # not "Nobody"
    u = Utterance(0.5, 2.5, "Hello there.", voice=0)
    with_face = ClipPerception(clip, faces=[FaceTrack([det(0, 0.0), det(1, 1.0), det(2, 2.0)])],
                               small_faces=[small(3)], utterances=[u], voices=[VoiceTrack([u])])
    lines = GroundedMemorizer().describe(with_face, [7], [8])
    assert "1 more face too small to identify appears on screen at 00:03." in lines.episodic
    # a face too small to identify does not stop the voice from voting for the one identified face
    assert lines.semantic == ["Equivalence: <face_7>, <voice_8>"]


def test_a_clips_lines_are_written_in_the_order_things_happen_as_the_training_worlds_write_a_scene():
    from m3agent.perception.screen_text import ScreenText
    from m3agent.perception.shots import Shot

    times = [30.0 + i for i in range(30)]
    clip = MediaClip(1, 30.0, 60.0, [np.zeros((4, 4, 3), np.uint8)] * 30, times)
    first = FaceTrack([det(i, times[i]) for i in range(0, 14)])  # 00:30-00:43
    second = FaceTrack([det(i, times[i]) for i in range(15, 30)])  # 00:45-00:59
    early = Utterance(31.2, 34.0, "Hello, I keep my kite in the shed.", voice=0)
    late = Utterance(45.4, 48.0, "The ferry leaves at nine.", voice=1)
    sign = ScreenText("PIER 7", 45.0, 59.0, (0, 0, 90, 30), 0.99)
    p = ClipPerception(clip, faces=[first, second], utterances=[late, early], voices=[VoiceTrack([early]),
                       VoiceTrack([late])], shots=[Shot(0, 14, 30.0, 44.0), Shot(15, 29, 45.0, 59.0)], texts=[sign])
    lines = GroundedMemorizer().describe(p, [10, 11], [20, 21])
    assert lines.episodic == [
        "<face_10> is on screen from 00:30 to 00:43.",
        'At 00:31 <voice_20> says: "Hello, I keep my kite in the shed."',
        "<face_11> is on screen from 00:45 to 00:59.",  # at one second: who is on screen, the cut, text, speech
        "The scene changes at 00:45.",
        'The text "PIER 7" is on screen from 00:45 to 00:59.',
        'At 00:45 <voice_21> says: "The ferry leaves at nine."',
    ]

