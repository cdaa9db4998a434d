import numpy as np

from m3agent.media.clips import MediaClip
from m3agent.memorize.grounded import GroundedMemorizer, clock, stated_names
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
