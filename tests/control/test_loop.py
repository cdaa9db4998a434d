"""The control loop's every branch, driven by a scripted chat model over the hand-built kitchen memory."""


import pytest

from m3agent.config import ControlConfig
from m3agent.control import (
    DROPPED,
    EMPTY_RESULT,
    KNOWLEDGE_PREFIX,
    Controller,
    Question,
    parse_action,
)
from m3agent.control.text import choose_query
from m3agent.models.llm.base import ChatError, ContextOverflowError, TransientChatError
from m3agent.models.llm.scripted import ScriptedChat

M3 = ControlConfig(seed_search=False)  # M3-Agent's protocol: the model makes every search


def knowledge(message: dict) -> dict:
    """``{"CLIP_k": [lines]}`` from the search results at the head of a user message."""
    content = message["content"]
    assert content.startswith(KNOWLEDGE_PREFIX)
    clips, current = {}, None
    for line in content.split("\n\n", 1)[0].splitlines()[1:]:
        if line.startswith("CLIP_"):
            current = clips.setdefault(line.split(" ", 1)[0], [])
        elif line.startswith("- ") and current is not None:
            current.append(line[2:])
    return clips


def test_parse_action():
    assert parse_action("Action: [Search]\nContent: where is the guitar") == ("search", "where is the guitar", False)
    assert parse_action("<think>Action: [Search] no</think>\nAction: [Answer]\nContent: Alice") == (
        "answer", "Alice", False)
    assert parse_action("action: answer content: Bob") == ("answer", "Bob", False)
    # small models echo labels or the question: the labels go, an echo or a bare label is no reply
    assert parse_action("Action: [Answer]\nContent: A: Peter's job is a chef.") == ("answer", "Peter's job is a chef.", False)
    assert parse_action("Action: [Answer]\nContent: Answer: A: in the garage") == ("answer", "in the garage", False)
    assert parse_action("Action: [Answer]\nContent: A man with a hat") == ("answer", "A man with a hat", False)
    assert parse_action("Action: [Answer]\nContent: A:") == ("search", "", False)
    assert parse_action("Action: [Answer]\nContent: Question: Where is it?") == ("search", "", False)
    for echo in ("Acti.", "Action", "content", "Search.", "[Answer]"):  # a word of the format, or its start
        assert parse_action(f"Action: [Answer]\nContent: {echo}") == ("search", "", False), echo
    assert parse_action("Action: [Answer]\nContent: Act 3") == ("answer", "Act 3", False)
    for word in ("Con.", "Sea", "Que"):  # three letters are a word as often as a start of the format (a sign's "CON")
        assert parse_action(f"Action: [Answer]\nContent: {word}") == ("answer", word, False), word
    # the header again as the content (the trained SmolLM2 replied so twice on the mini M3-Bench): what follows it
    assert parse_action("Action: [Answer]\nContent: Action: [Answer]") == ("search", "", False)
    assert parse_action("Action: [Answer]\nContent: Action: [Answer] Content: 100 degrees") == (
        "answer", "100 degrees", False)
    assert parse_action("Action: [Answer]\nContent: Action: [Search]\nContent: boiling water") == (
        "search", "boiling water", False)
    assert parse_action("Action: [Answer]\nContent: An") == ("answer", "An", False)
    assert choose_query("", False, "Where is it?") == "Where is it?"
    assert parse_action("I think the fridge") == ("search", "I think the fridge", True)
    assert parse_action('The answer is: "the garage"') == ("answer", "the garage", True)
    assert parse_action("Answer - Alice") == ("answer", "Alice", True)
    assert parse_action("Answers vary") == ("search", "Answers vary", True)


def test_search_then_answer_with_names_and_trace(kitchen):
    a = kitchen.ids["alice_face"]
    chat = ScriptedChat(["Action: [Search]\nContent: who opens the fridge in the kitchen",
                         f"<think>found it</think>Action: [Answer]\nContent: <character_{a}> opened it."])
    answer = Controller(kitchen, chat, M3).answer(Question("Who opened the fridge?"))
    assert answer.answer == "Alice opened it."
    assert [r.action for r in answer.rounds] == ["search", "answer"]
    assert answer.rounds[0].clips and answer.rounds[0].clips[0] == 0
    seen = chat.calls[1][-1]  # the search result goes out with the next round's instruction
    assert "Alice opens the fridge in the kitchen" in knowledge(seen)["CLIP_0"]  # the name memory knows, not the id
    assert f"<character_{a}>'s name is Alice" in knowledge(seen)["CLIP_0"]  # a name statement stays as it is
    assert "Round 2 of 5" in seen["content"]
    assert "Round 1 of 5" in chat.calls[0][1]["content"]
    roles = [m["role"] for m in chat.calls[1]]
    assert roles == ["system", "user", "assistant", "user"]  # strict alternation: every chat template accepts it
    data = answer.to_dict()
    assert data["answer"] == "Alice opened it." and data["rounds"][0]["clips"] == answer.rounds[0].clips
    assert data["trace"][0]["hits"][0]["clip"] == 0 and answer.evidence[0]["end"] > answer.evidence[0]["start"]
    assert answer.tokens > 0 and answer.seconds >= 0 and data["tokens"] == answer.tokens


def test_seed_search_gives_the_first_round_evidence(kitchen):
    chat = ScriptedChat(["Action: [Answer]\nContent: Alice"])
    answer = Controller(kitchen, chat).answer(Question("Who opens the fridge in the kitchen?"))
    seed, final = answer.rounds
    assert seed.by == "seed" and seed.action == "search" and seed.content == "Who opens the fridge in the kitchen?"
    assert 0 in seed.clips and seed.prompt_tokens == 0
    first = chat.calls[0][-1]
    assert "CLIP_0" in knowledge(first) and "Round 1 of 5" in first["content"]
    assert final.by == "model" and answer.answer == "Alice"


def test_malformed_reply_searches_raw_text_and_last_round_forces_answer(kitchen):
    chat = ScriptedChat(["the guitar on the sofa", "Action: [Search]\nContent: guitar concert sofa",
                         "Action: [Search]\nContent: quantum physics lecture notes",
                         "Action: [Search]\nContent: more", "Action: [Search]\nContent: Bob plays guitar"])
    answer = Controller(kitchen, chat, ControlConfig(max_rounds=3, seed_search=False)).answer(Question("Who plays guitar?"))
    assert len(answer.rounds) == 3
    assert answer.rounds[0].malformed and answer.rounds[0].action == "search" and answer.rounds[0].clips
    assert answer.rounds[2].action == "answer"  # forced on the last round, whatever the model says
    assert "last round" in chat.calls[2][-1]["content"]
    assert answer.answer == "quantum physics lecture notes"


def test_empty_results_are_flagged_and_clips_never_repeat(kitchen):
    chat = ScriptedChat(["Action: [Search]\nContent: cooks pasta in the kitchen",
                         "Action: [Search]\nContent: cooks pasta in the kitchen",
                         "Action: [Answer]\nContent: Bob"])
    answer = Controller(kitchen, chat, M3).answer(Question("Who cooks?"))
    first, second = answer.rounds[0].clips, answer.rounds[1].clips
    assert first and not set(first) & set(second)
    empty = ScriptedChat(["Action: [Search]\nContent: zebra xylophone", "Action: [Answer]\nContent: unknown"])
    Controller(kitchen, empty, M3).answer(Question("Anything about zebras?"))
    assert EMPTY_RESULT in empty.calls[1][-1]["content"]


def test_character_id_lookup_and_before_clip(kitchen):
    a, bob = kitchen.ids["alice_face"], kitchen.ids["bob_face"]
    chat = ScriptedChat(["Action: [Search]\nContent: What is the character id of Alice",
                         f"Action: [Answer]\nContent: <character_{a}> and <character_{bob}>"])
    answer = Controller(kitchen, chat, M3).answer(Question("Who is Alice?", before_clip=0))
    assert f"<character_{a}>'s name is Alice" in chat.calls[1][-1]["content"]
    assert answer.answer == "Alice and an unnamed person"  # Bob never says his name; ids never leak
    chat = ScriptedChat(["Action: [Search]\nContent: cooks pasta in the kitchen", "Action: [Answer]\nContent: x"])
    early = Controller(kitchen, chat, M3).answer(Question("Who cooks?", before_clip=1))
    assert all(c <= 1 for c in early.rounds[0].clips)


def test_answer_many_runs_rounds_in_lock_step_with_one_batch_per_round(kitchen):
    def reply(messages):
        question = messages[0]["content"]
        if "fridge" in question:
            return "Action: [Answer]\nContent: Alice"
        return "Action: [Search]\nContent: pasta" if len(messages) < 4 else "Action: [Answer]\nContent: Bob"

    chat = ScriptedChat(reply)
    batches = []
    batch = chat.batch
    chat.batch = lambda conversations, **kw: batches.append(len(conversations)) or batch(conversations, **kw)
    answers = Controller(kitchen, chat).answer_many([Question("Who opens the fridge?"), Question("Who cooks pasta?"),
                                                     Question("Who cooks?", before_clip=0)])
    assert [a.answer for a in answers] == ["Alice", "Bob", "Bob"]
    assert batches == [3, 2]  # the answered question leaves the batch
    assert all(c == 0 for c in answers[2].rounds[1].clips)  # before_clip holds per question


def test_context_overflow_drops_the_oldest_search_results_first(kitchen):
    searches = [f"Action: [Search]\nContent: {q}" for q in ("kitchen fridge", "guitar sofa", "pasta cooking")]
    replies = searches + ["Action: [Answer]\nContent: done"]

    def size(messages):
        return sum(len(m["content"]) for m in messages)

    roomy = ScriptedChat(replies)
    Controller(kitchen, roomy).answer(Question("What happens in the kitchen?"))
    limit = size(roomy.calls[-1]) - 150  # the last round no longer fits as it stands

    class Tight(ScriptedChat):
        def _complete(self, messages, params):
            if size(messages) > limit:
                raise ContextOverflowError("prompt exceeds the context window")
            return super()._complete(messages, params)

    chat = Tight(replies)
    answer = Controller(kitchen, chat).answer(Question("What happens in the kitchen?"))
    assert answer.answer == "done" and not answer.error
    sent = chat.calls[-1]
    assert sent[1]["content"].startswith(DROPPED) and size(sent) <= limit
    assert not sent[-1]["content"].startswith(DROPPED)  # the newest results stay

    hopeless = Tight(["x"])
    answer = Controller(kitchen, hopeless).answer_many([Question("kitchen " * 600)])[0]
    assert answer.error and "context window" in answer.error and answer.answer == ""


def test_a_failing_question_does_not_sink_the_batch(kitchen):
    def reply(messages):
        if "explode" in messages[0]["content"]:
            raise ChatError("server said 400")
        return "Action: [Answer]\nContent: fine"

    answers = Controller(kitchen, ScriptedChat(reply)).answer_many([Question("Who cooks?"), Question("explode?")])
    assert answers[0].answer == "fine" and answers[0].error is None
    assert answers[1].error == "server said 400"
    with pytest.raises(ChatError):
        Controller(kitchen, ScriptedChat(reply)).answer(Question("explode?"))
    lost = Controller(kitchen, ScriptedChat(reply)).answer_many([Question("Who?", video="no-such-video")])[0]
    assert "no video 'no-such-video'" in lost.error and lost.answer == ""


def test_transient_failures_are_retried_then_reported(kitchen):
    flaky = ScriptedChat([TransientChatError("connection refused"), "Action: [Answer]\nContent: Alice"])
    assert Controller(kitchen, flaky).answer(Question("Who opens the fridge?")).answer == "Alice"
    assert len(flaky.calls) == 2
    down = ScriptedChat([TransientChatError("connection refused")], retries=1)
    answer = Controller(kitchen, down).answer_many([Question("Who opens the fridge?")])[0]
    assert "gave up after 2 attempts" in answer.error and len(down.calls) == 2


def test_answers_come_out_one_by_one_as_they_finish(kitchen):
    events = []

    def reply(messages):
        events.append(("ask", messages[0]["content"].rsplit("Question: ", 1)[1].strip(), len(messages)))
        if "fridge" in messages[0]["content"] or len(messages) > 2:
            return "Action: [Answer]\nContent: Alice"
        return "Action: [Search]\nContent: pasta"

    questions = [Question("Who cooks pasta?"), Question("Who opens the fridge?"), Question("Who?", video="nope")]
    for index, answer in Controller(kitchen, ScriptedChat(reply)).iter_answers(questions):
        events.append(("done", index, answer.answer or answer.error))
    assert events[0] == ("done", 2, "no video 'nope' in " + str(kitchen.store.path))  # failed before any round
    assert events[1:] == [("ask", "Who cooks pasta?", 2), ("ask", "Who opens the fridge?", 2),
                          ("done", 1, "Alice"),  # saved before round 2 goes out
                          ("ask", "Who cooks pasta?", 4), ("done", 0, "Alice")]


def test_questions_that_cannot_be_answered_fail_before_any_model_call(kitchen):
    from m3agent.control import EmptyMemoryError
    from m3agent.memory.search import QueryError

    for text in ("", "  \n"):
        with pytest.raises(QueryError, match="the question is empty"):
            Question(text)
    with pytest.raises(QueryError, match=r"before_clip must be a clip number >= 0 \(got -1\)"):
        Question("Who?", before_clip=-1)
    chat = ScriptedChat(["Action: [Answer]\nContent: made up"])
    with pytest.raises(QueryError, match="before_clip"):
        Controller(kitchen, chat).answer(Question("Who?", before_clip=-3))
    kitchen.add_video("empty")  # memorization never got to its first clip
    with pytest.raises(EmptyMemoryError, match="no clip of video 'empty'"):
        Controller(kitchen, chat).answer(Question("Who cooks?", video="empty"))
    answer = Controller(kitchen, chat).answer_many([Question("Who cooks?", video="empty")])[0]
    assert "no clip of video 'empty'" in answer.error and answer.answer == ""
    assert chat.calls == []


def test_before_clip_past_the_last_clip_sees_all_clips_and_negative_is_an_error(kitchen):
    from m3agent.memory.search import QueryError, check_query

    def clips(**kw):
        return [c.id for c in kitchen.search("cooks pasta in the kitchen", threshold=0.05, top_k=4, **kw).clips]

    everything = clips()
    assert everything and 3 in everything
    for beyond in (3, 1000, 2**31, 10**30):
        assert clips(before_clip=beyond) == everything, beyond
    with pytest.raises(QueryError, match="before_clip"):
        clips(before_clip=-1)
    for query in ("", "   "):
        with pytest.raises(QueryError, match="the search query is empty"):
            check_query(query)  # the CLI's rule; the library still answers an empty query with no clips
    chat = ScriptedChat(["Action: [Answer]\nContent: Bob"])
    answer = Controller(kitchen, chat).answer(Question("Who cooks pasta in the kitchen?", before_clip=10**30))
    assert 3 in answer.rounds[0].clips  # the seed search saw the last clip
