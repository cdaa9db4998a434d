"""The control loop's every branch, driven by a scripted chat model over the hand-built kitchen memory."""

import json

from m3agent.config import ControlConfig
from m3agent.control import EMPTY_RESULT, Controller, parse_action
from m3agent.models.llm.scripted import ScriptedChat


def test_parse_action():
    assert parse_action("Action: [Search]\nContent: where is the guitar") == ("search", "where is the guitar", False)
    assert parse_action("<think>Action: [Search] no</think>\nAction: [Answer]\nContent: Alice") == (
        "answer", "Alice", False)
    assert parse_action("action: answer content: Bob") == ("answer", "Bob", False)
    assert parse_action("I think the fridge") == ("search", "I think the fridge", True)


def test_search_then_answer_with_names_and_trace(kitchen):
    a = kitchen.ids["alice_face"]
    chat = ScriptedChat(["Action: [Search]\nContent: who opens the fridge in the kitchen",
                         f"<think>found it</think>Action: [Answer]\nContent: <character_{a}> opened it."])
    answer = Controller(kitchen, chat).answer("Who opened the fridge?")
    assert answer.answer == "Alice opened it."
    assert [r.action for r in answer.rounds] == ["search", "answer"]
    assert answer.rounds[0].clips and answer.rounds[0].clips[0] == 0
    searched = chat.calls[1][-2]["content"]  # the search result the model saw
    assert searched.startswith("Searched knowledge: ")
    knowledge = json.loads(searched.removeprefix("Searched knowledge: "))
    assert f"<character_{a}> opens the fridge in the kitchen" in knowledge["CLIP_0"]
    assert "round 1 of 5" in chat.calls[0][1]["content"]
    data = answer.to_dict()
    assert data["answer"] == "Alice opened it." and data["rounds"][0]["clips"] == answer.rounds[0].clips
    assert answer.tokens > 0 and answer.seconds >= 0


def test_malformed_reply_searches_raw_text_and_last_round_forces_answer(kitchen):
    chat = ScriptedChat(["the guitar on the sofa", "Action: [Search]\nContent: guitar concert sofa",
                         "Action: [Search]\nContent: quantum physics lecture notes",
                         "Action: [Search]\nContent: more", "Action: [Search]\nContent: Bob plays guitar"])
    answer = Controller(kitchen, chat, ControlConfig(max_rounds=3)).answer("Who plays guitar?")
    assert len(answer.rounds) == 3
    assert answer.rounds[0].malformed and answer.rounds[0].action == "search" and answer.rounds[0].clips
    assert answer.rounds[2].action == "answer"  # forced on the last round, whatever the model says
    assert "last round" in chat.calls[2][-1]["content"]
    assert answer.answer == "quantum physics lecture notes"


def test_empty_results_are_flagged_and_clips_never_repeat(kitchen):
    chat = ScriptedChat(["Action: [Search]\nContent: cooks pasta in the kitchen",
                         "Action: [Search]\nContent: cooks pasta in the kitchen",
                         "Action: [Answer]\nContent: Bob"])
    answer = Controller(kitchen, chat).answer("Who cooks?")
    first, second = answer.rounds[0].clips, answer.rounds[1].clips
    assert first and not set(first) & set(second)
    empty = ScriptedChat(["Action: [Search]\nContent: zebra xylophone", "Action: [Answer]\nContent: unknown"])
    Controller(kitchen, empty).answer("Anything about zebras?")
    assert EMPTY_RESULT in empty.calls[1][-2]["content"]


def test_character_id_lookup_and_before_clip(kitchen):
    a, bob = kitchen.ids["alice_face"], kitchen.ids["bob_face"]
    chat = ScriptedChat(["Action: [Search]\nContent: What is the character id of Alice",
                         f"Action: [Answer]\nContent: <character_{a}> and <character_{bob}>"])
    answer = Controller(kitchen, chat).answer("Who is Alice?", before_clip=0)
    lines = chat.calls[1][-2]["content"]
    assert f"<character_{a}>'s name is Alice" in lines
    assert answer.answer == "Alice and an unnamed person"  # Bob never says his name; ids never leak
    chat = ScriptedChat(["Action: [Search]\nContent: cooks pasta in the kitchen", "Action: [Answer]\nContent: x"])
    early = Controller(kitchen, chat).answer("Who cooks?", before_clip=1)
    assert all(c <= 1 for c in early.rounds[0].clips)
