"""The control step driven by hand, as an RL rollout that generates tokens itself would drive it:
the same replies must give the same conversation and answer as the lock-step Controller."""

from types import SimpleNamespace

import pytest

from m3agent.config import ControlConfig
from m3agent.control import (
    DROPPED,
    KNOWLEDGE_PREFIX,
    Controller,
    ControlStep,
    Question,
    choose_query,
    drop_oldest_results,
    format_results,
)
from m3agent.control.text import MAX_QUERY_CHARS
from m3agent.eval.corrections import held_answer
from m3agent.eval.grounding import follow_up, quoted_answer
from m3agent.models.llm.base import ChatResponse
from m3agent.models.llm.scripted import ScriptedChat


def by_hand(step: ControlStep, question: Question, replies: list[str]):
    """The rollout loop: build the first messages, instruct, generate (here: the next scripted string),
    apply, until the question is done. Returns the answer and what the model was shown each round."""
    state = step.start(question)
    shown = []
    for number, reply in zip(range(1, step.rounds + 1), replies):
        step.instruct(state, number)
        shown.append([dict(m) for m in state.messages])
        step.apply(state, reply, last=number == step.rounds)
        if state.done:
            break
    return step.finish(state), shown


def trace(answer):
    return [(r.action, r.content, r.clips, r.by, r.malformed, r.hits) for r in answer.rounds]


@pytest.mark.parametrize("seed_search", [True, False])
def test_driving_the_step_by_hand_matches_the_controller(kitchen, seed_search):
    a, bob = kitchen.ids["alice_face"], kitchen.ids["bob_face"]
    replies = ["the guitar on the sofa",  # malformed: searched as it stands
               "Action: [Search]\nContent: What is the character id of Alice",
               "<think>both found</think>\nAction: [Search]\nContent: cooks pasta in the kitchen",
               f"Action: [Answer]\nContent: <character_{bob}> plays guitar; <character_{a}> listens."]
    config = ControlConfig(seed_search=seed_search)
    question = Question("Who plays guitar?")

    manual, shown = by_hand(ControlStep(kitchen, config), question, replies)
    chat = ScriptedChat(replies)
    automatic = Controller(kitchen, chat, config).answer_many([question])[0]

    assert manual.answer == automatic.answer == "an unnamed person plays guitar; Alice listens."
    assert trace(manual) == trace(automatic)
    assert [r.by for r in manual.rounds] == ["seed"] * seed_search + ["model"] * 4
    assert shown == chat.calls  # word for word what the model reads, round after round
    assert manual.notes == automatic.notes and manual.notes
    assert not any("<character_" in line for lines in manual.notes.values() for line in lines)
    assert manual.error is None and manual.tokens == 0 < automatic.tokens  # strings carry no token counts


def test_a_search_reply_leaves_the_results_to_feed_back_and_an_answer_ends_the_question(kitchen):
    step = ControlStep(kitchen, ControlConfig(seed_search=False, max_rounds=3))
    state = step.start(Question("Who opens the fridge?"))
    assert [m["role"] for m in state.messages] == ["system"] and not state.pending

    step.instruct(state, 1)
    assert "Round 1 of 3" in state.messages[-1]["content"]
    found = step.apply(state, "Action: [Search]\nContent: opens the fridge in the kitchen", last=False)
    assert found.action == "search" and 0 in found.clips and not state.done
    assert state.pending.startswith(KNOWLEDGE_PREFIX) and "CLIP_0 (00:00-00:30):" in state.pending

    step.instruct(state, 2)
    assert state.messages[-1]["content"].startswith(KNOWLEDGE_PREFIX) and not state.pending
    reply = ChatResponse("Action: [Answer]\nContent: Alice", prompt_tokens=90, completion_tokens=6, seconds=0.5)
    final = step.apply(state, reply, last=False)
    assert (final.action, final.prompt_tokens, final.completion_tokens, final.seconds) == ("answer", 90, 6, 0.5)
    assert state.done and state.final == "Alice"
    with pytest.raises(ValueError, match="already finished"):
        step.apply(state, "Action: [Answer]\nContent: Bob", last=False)
    answer = step.finish(state)
    assert answer.answer == "Alice" and answer.tokens == 96 and answer.to_dict()["rounds"][0]["clips"] == found.clips


def test_the_last_round_forces_an_answer_without_searching(kitchen):
    step = ControlStep(kitchen, ControlConfig(seed_search=False, max_rounds=1))
    state = step.start(Question("Who cooks?"))
    step.instruct(state, 1)
    assert "last round" in state.messages[-1]["content"]
    last = step.apply(state, "Action: [Search]\nContent: cooks pasta", last=True)
    assert last.action == "answer" and last.clips == [] and state.final == "cooks pasta" and not state.pending


def test_a_question_about_a_video_memory_lacks_fails_at_start(kitchen):
    step = ControlStep(kitchen)
    state = step.start(Question("Who?", video="no-such-video"))
    assert state.done and "no video 'no-such-video'" in state.error and state.rounds == []
    answer = step.finish(state)
    assert answer.answer == "" and answer.error == state.error


def test_choose_query():
    question = "Who cooks?"
    assert choose_query("pasta in the kitchen", False, question) == "pasta in the kitchen"
    assert choose_query("  ", False, question) == question
    assert choose_query("\n  the fridge\nand more lines", True, question) == "the fridge"
    assert choose_query("x" * 1000, True, question) == "x" * MAX_QUERY_CHARS
    # small models echo the notes back: such a line would be a useless query, the question is searched
    assert choose_query(KNOWLEDGE_PREFIX + '"pasta":\nCLIP_3 (01:30-02:00):', True, question) == question
    assert choose_query("- CLIP_3 (01:30-02:00):", True, question) == question
    assert choose_query("", True, question) == question


def test_drop_oldest_results():
    instruction = "Round 3 of 5. Reply ...\n\nQuestion: Who cooks?"
    messages = [{"role": "system", "content": KNOWLEDGE_PREFIX + "is not a user message"},
                {"role": "user", "content": KNOWLEDGE_PREFIX + '"fridge":\nCLIP_0 (00:00-00:30):\n- x\n\n' + instruction},
                {"role": "assistant", "content": "Action: [Search]\nContent: pasta"},
                {"role": "user", "content": KNOWLEDGE_PREFIX + '"pasta":\n(The search result is empty.)'},
                {"role": "user", "content": "Round 5 of 5. no results here"}]
    assert drop_oldest_results(messages)
    assert messages[1]["content"] == DROPPED + "\n\n" + instruction  # the round's instruction stays
    assert messages[3]["content"].startswith(KNOWLEDGE_PREFIX + '"pasta"')  # newer results stay
    assert drop_oldest_results(messages)
    assert messages[3]["content"] == DROPPED
    assert not drop_oldest_results(messages)  # nothing left to drop: the caller must give up
    assert messages[0]["content"].startswith(KNOWLEDGE_PREFIX) and messages[4]["content"].endswith("here")


def test_format_results_shows_time_spans_and_flags_empty_results():
    clip = SimpleNamespace(id=123, start=3700.0, end=3730.0, lines=["Alice cooks"])
    text = format_results("cooking", SimpleNamespace(clips=[clip], empty=False))
    assert text == KNOWLEDGE_PREFIX + '"cooking":\nCLIP_123 (1:01:40-1:02:10):\n- Alice cooks'
    assert "search result is empty" in format_results("zebra", SimpleNamespace(clips=[], empty=True))


def test_format_results_keeps_the_searchs_order():
    later = SimpleNamespace(id=3, start=90.0, end=120.0, lines=["David moved the keys to the drawer"])
    earlier = SimpleNamespace(id=0, start=0.0, end=30.0, lines=["David put the keys in the bowl"])
    text = format_results("keys", SimpleNamespace(clips=[later, earlier], empty=False))
    assert text.index("CLIP_3 ") < text.index("CLIP_0 ")  # best first, as the adapter was trained to read it


def test_every_round_asks_for_the_control_reply_format_which_has_a_grammar(kitchen):
    """Backend-neutral: the step names the format; backends with a grammar engine look it up by that name."""
    from m3agent.control.text import REPLY_FORMAT
    from m3agent.prompts import load_grammar

    sampling = ControlStep(kitchen).sampling
    assert sampling["format"] == REPLY_FORMAT == "control_action"
    grammar = load_grammar(sampling["format"])
    assert 'root' in grammar and '"Search" | "Answer"' in grammar
    chat = ScriptedChat(["Action: [Answer]\nContent: Alice"])  # a backend with no grammar engine ignores it
    assert chat.chat([{"role": "user", "content": "?"}], **sampling).text.endswith("Alice")


def test_an_answer_that_only_copies_the_question_is_searched_again_until_the_last_round(kitchen):
    step = ControlStep(kitchen, ControlConfig(seed_search=False, max_rounds=3))
    question = Question("Who opens the fridge?")
    answer, shown = by_hand(step, question, ["Action: [Answer]\nContent: who opens the fridge",
                                             "Action: [Answer]\nContent: Who opens the fridge?"])
    assert [r.action for r in answer.rounds] == ["search", "search"]  # nothing answered: the question searched
    assert answer.rounds[0].content == "" and answer.rounds[0].clips  # (an empty content: the question itself)
    last, _ = by_hand(ControlStep(kitchen, ControlConfig(seed_search=False, max_rounds=1)), question,
                      ["Action: [Answer]\nContent: Who opens the fridge?"])
    assert [r.action for r in last.rounds] == ["answer"]  # the last round's reply is the answer, whatever it is


def test_echoes_compares_words_not_case_or_punctuation():
    from m3agent.control.text import echoes

    assert echoes("who opens the FRIDGE", "Who opens the fridge?")
    assert not echoes("Alice opens the fridge.", "Who opens the fridge?")
    assert not echoes("", "Who?") and not echoes("...", "...")


def test_search_results_show_names_memory_knows_and_ids_of_people_it_does_not(kitchen):
    a, bob = kitchen.ids["alice_face"], kitchen.ids["bob_face"]
    state = ControlStep(kitchen, ControlConfig(seed_search=True)).start(Question("Who plays guitar in the room?"))
    shown = state.pending.splitlines()
    assert f"- Alice and <character_{bob}> talk about the concert" in shown  # Bob never says his name here
    assert f"- <character_{bob}> plays guitar on the sofa" in shown
    raw = [line for lines in state.notes.values() for line in lines]
    assert f"<character_{a}> and <character_{bob}> talk about the concert" in raw  # the notes keep the ids


@pytest.mark.parametrize("gate", [True, False])
def test_the_question_is_shown_the_lessons_memory_finds_about_it(kitchen, gate):
    own = 'Asked "Is the fridge full?", the answer "Yes." was wrong; the user corrected it: "No, it is empty.".'
    other = 'Asked "Who plays guitar on the sofa?", the answer "Alice." was wrong; the user corrected it: "Bob.".'
    for text in (own, other):
        kitchen.remember_lesson(kitchen.video, 1, text)
    system = ControlStep(kitchen, ControlConfig(lesson_gate=gate)).start(Question("Is the fridge full?"))
    shown = system.messages[0]["content"]
    assert own in shown and (other in shown) is not gate  # control.lesson_gate=false: the nearest, as they come


@pytest.mark.parametrize("hold", [True, False])
def test_an_answer_the_user_corrected_for_this_question_is_not_given_again(kitchen, hold):
    kitchen.remember_lesson(kitchen.video, 1, 'Asked "Is the fridge full?", the answer "Yes, it is full." was wrong; '
                                              'the user corrected it: "No, it is empty.".')
    step = ControlStep(kitchen, ControlConfig(), {"correction": held_answer} if hold else None)
    repeated, _ = by_hand(step, Question("Is the fridge full?"), ["Action: [Answer]\nContent: Yes, it is full."])
    assert repeated.answer == ("No, it is empty." if hold else "Yes, it is full.")
    assert repeated.rounds[-1].replaced == ("Yes, it is full." if hold else "")
    assert repeated.rounds[-1].replaced_by == ("correction" if hold else "")
    assert repeated.rounds[-1].by == "model"  # the model's round still counts as one
    assert ("replaced" in repeated.to_dict()["rounds"][-1]) is hold
    other, _ = by_hand(step, Question("Who plays guitar on the sofa?"), ["Action: [Answer]\nContent: Yes, it is full."])
    assert other.answer == "Yes, it is full."  # the correction of another question holds nothing here


def test_an_answer_mostly_invented_gives_the_note_nearest_the_question(kitchen):
    step = ControlStep(kitchen, ControlConfig(), {"quote": quoted_answer})
    invented, _ = by_hand(step, Question("Who cooks pasta in the kitchen?"), ["Action: [Answer]\nContent: Gordon."])
    assert invented.answer.endswith("cooks pasta in the kitchen")  # the note, names as users read them
    assert invented.rounds[-1].replaced == "Gordon." and invented.rounds[-1].replaced_by == "quote"
    assert "the model said 'Gordon.', which no note shown about the question holds" in invented.rounds[-1].replaced_note()
    assert invented.to_dict()["rounds"][-1]["replaced_by"] == "quote"
    kept, _ = by_hand(step, Question("Who cooks pasta?"), ["Action: [Answer]\nContent: Gordon cooks pasta in the kitchen."])
    assert kept.answer == "Gordon cooks pasta in the kitchen." and not kept.rounds[-1].replaced  # mostly read


@pytest.mark.parametrize("follow", [True, False])
def test_the_person_the_seed_search_names_for_a_question_that_only_describes_them_is_searched_too(kitchen, follow):
    question = Question("What else does the person who opens the fridge do?")
    config = ControlConfig(follow_names=follow)
    state = ControlStep(kitchen, config, follow=follow_up(config)).start(question)
    assert state.rounds[0].content == question.text
    assert [r.by for r in state.rounds] == ["seed"] * (1 + follow)
    if follow:
        assert state.rounds[1].content == f"Alice {question.text}"  # the fridge's line names Alice
        assert state.pending.count(KNOWLEDGE_PREFIX) == 2  # both searches' results, in one message for round 1
        clips = state.rounds[0].clips + state.rounds[1].clips
        assert len(clips) == len(set(clips))  # no clip shown twice
    named = ControlStep(kitchen, config, follow=follow_up(config)).start(Question("What else does Alice do?"))
    assert len(named.rounds) == 1  # a question that names its person is searched by that name alone
