"""The chat memorizer's control logic with a scripted model: parsing, retries, fallback, tag checks."""

import json

import numpy as np
import pytest

from m3agent.media.clips import MediaClip
from m3agent.memorize.chat import ChatMemorizer, parse_memory_json
from m3agent.memorize.grounded import GroundedMemorizer
from m3agent.models.llm.scripted import ScriptedChat
from m3agent.perception.faces.base import FaceDetection
from m3agent.perception.pipeline import ClipPerception, FaceTrack, Utterance, VoiceTrack


@pytest.fixture
def perception():
    frames = [np.full((90, 160, 3), i * 20, np.uint8) for i in range(6)]
    clip = MediaClip(2, 60.0, 90.0, frames, [60.0 + i for i in range(6)], np.zeros(16000 * 30, np.float32))
    det = [FaceDetection(i, 60.0 + i, (10, 10, 60, 60), 1.2, np.ones(128, np.float32),
                         np.full((60, 60, 3), 128, np.uint8), 50.0) for i in range(6)]
    u = Utterance(61.0, 64.0, "Hello, my name is Nora. I love sailing.", np.ones(256, np.float32), voice=0)
    return ClipPerception(clip, faces=[FaceTrack(det)], utterances=[u], voices=[VoiceTrack([u])])


GOOD = json.dumps({"episodic": ["<face_4> waves at the camera.", "<face_99> is a ghost."],
                   "semantic": ["<face_4> loves sailing.", "Equivalence: <face_4>, <voice_7>"]})


def test_valid_reply_is_used_and_checked(perception):
    chat = ScriptedChat([GOOD])
    lines = ChatMemorizer(chat).describe(perception, [4], [7])
    assert lines.episodic == ["<face_4> waves at the camera."]  # the unknown <face_99> line is dropped
    assert "<face_4> loves sailing." in lines.semantic
    assert "<voice_7>'s name is Nora" in lines.semantic  # perception-grounded semantics are kept
    assert lines.semantic.count("Equivalence: <face_4>, <voice_7>") == 1
    parts = chat.calls[0][0]["content"]
    assert sum(p["type"] == "image_url" for p in parts) == 1 + 6  # one face crop and the frames
    prompt = parts[0]["text"]
    assert "<face_4> on screen 01:00-01:05" in prompt and "<voice_7> [01:01-01:04]: Hello" in prompt


def test_malformed_reply_is_retried(perception):
    chat = ScriptedChat(["Sure! Here are the memories: episodic: waves", "<think>{not json}</think>" + GOOD])
    memorizer = ChatMemorizer(chat, retries=1)
    lines = memorizer.describe(perception, [4], [7])
    assert len(chat.calls) == 2 and memorizer.fallbacks == 0
    assert "JSON object" in chat.calls[1][-1]["content"]
    assert lines.episodic == ["<face_4> waves at the camera."]


def test_garbage_or_failure_falls_back_to_grounded(perception):
    grounded = GroundedMemorizer().describe(perception, [4], [7])
    memorizer = ChatMemorizer(ScriptedChat(["!!!", "[1, 2, 3]"]), retries=1)
    assert memorizer.describe(perception, [4], [7]) == grounded and memorizer.fallbacks == 1

    def boom(messages):
        raise TimeoutError("server down")

    assert ChatMemorizer(ScriptedChat(boom)).describe(perception, [4], [7]) == grounded


def test_text_only_model_gets_a_text_prompt(perception):
    chat = ScriptedChat([GOOD], supports_images=False)
    ChatMemorizer(chat).describe(perception, [4], [7])
    assert isinstance(chat.calls[0][0]["content"], str)


def test_parse_memory_json():
    assert parse_memory_json('{"episodic": ["a"], "semantic": []}').episodic == ["a"]
    assert parse_memory_json('<think>maybe {"x": 1}</think>\n{"episodic": [], "semantic": ["b"]}').semantic == ["b"]
    assert parse_memory_json('{"episodic": "not a list"}') is None
    assert parse_memory_json('{"episodic": [], "semantic": []}') is None
    assert parse_memory_json("no json here") is None


def test_build_memorizer_requires_a_chat_backend():
    from m3agent.config import ConfigError, load_config
    from m3agent.factory import build_memorizer

    with pytest.raises(ConfigError, match="memorize.chat.backend"):  # refused when the config loads
        load_config(overrides=["memorize.memorizer=chat"])
    memorizer = build_memorizer(load_config(overrides=["memorize.memorizer=chat",
                                                       "memorize.chat.backend=scripted"]).memorize)
    assert isinstance(memorizer, ChatMemorizer)


def test_key_frames_and_on_screen_text_reach_the_model_and_memory(perception):
    from m3agent.perception.screen_text import ScreenText
    from m3agent.perception.shots import Shot

    perception.shots = [Shot(0, 3, 60.0, 63.0), Shot(4, 5, 64.0, 65.0)]
    perception.key_frames = [0, 4]
    perception.texts = [ScreenText("Harbour Street", 64.0, 65.0, (0, 0, 50, 10), 0.99)]
    chat = ScriptedChat([GOOD])
    memorizer = ChatMemorizer(chat, frames=3)
    assert memorizer.frames_to_send(perception) == [0, 2, 4]  # both key frames, topped up with an evenly spaced one
    lines = memorizer.describe(perception, [4], [7])
    parts = chat.calls[0][0]["content"]
    assert 'The text "Harbour Street" is on screen from 01:04 to 01:05.' in parts[0]["text"]
    assert "The scene changes at 01:04." in parts[0]["text"]
    assert [p["text"] for p in parts if p["type"] == "text"][-3:] == ["01:00", "01:02", "01:04"]
    assert 'The text "Harbour Street" is on screen from 01:04 to 01:05.' in lines.episodic  # OCR's line is kept
