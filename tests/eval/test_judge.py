"""Judges: yes/no parsing in many phrasings, retries, a judge that never answers, the offline judge, choices."""

import pytest

from m3agent.config import JudgeConfig
from m3agent.eval.annotations import BenchItem
from m3agent.eval.judge import (
    ChatJudge,
    OfflineJudge,
    answer_f1,
    contains,
    extract_choice,
    offline_match,
    parse_yes_no,
    score_choice,
    words_swapped,
)
from m3agent.models.llm.base import ChatError
from m3agent.models.llm.scripted import ScriptedChat

ITEM = BenchItem("q1", "v", "Where are the keys?", "In the blue bowl.")


@pytest.mark.parametrize("reply", ["Yes", "yes.", "YES!", "**Yes**", "Yes, the answer says the keys are in the bowl.",
                                   "Answer: yes", "Verdict - Yes", "<think>It says bowl, so no doubt.</think>\nYes",
                                   "After comparing both, the answer is yes.", "是", "`yes`", "  \n yes \n"])
def test_yes_in_its_phrasings(reply):
    assert parse_yes_no(reply) is True


@pytest.mark.parametrize("reply", ["No", "no.", "NO", "**No.**", "No, the answer names a drawer.", "Judgement: No",
                                   "The ground truth cannot be inferred; my verdict is no.", "否", "Incorrect"])
def test_no_in_its_phrasings(reply):
    assert parse_yes_no(reply) is False


@pytest.mark.parametrize("reply", ["", "   ", "I cannot help with that request.", "As an AI, I am unable to judge.",
                                   "Maybe", "Yes and no: partly.", "asdf qwer zxcv", "The keys are in the bowl.",
                                   "Yesterday the keys were there.", "Nobody knows", "<think>yes</think>"])
def test_refusals_garbage_and_both_are_no_verdict(reply):
    assert parse_yes_no(reply) is None


def test_chat_judge_asks_at_temperature_zero_and_parses():
    chat = ScriptedChat(["Yes."])
    (verdict,) = ChatJudge(JudgeConfig(backend="chat"), chat=chat).judge_many([(ITEM, "They are in a blue bowl.")])
    assert verdict.correct is True and verdict.reply == "Yes." and verdict.judge.startswith("chat:auto")
    prompt = chat.calls[0][0]["content"]
    assert "In the blue bowl." in prompt and "They are in a blue bowl." in prompt and "Yes or No" in prompt


def test_an_unparseable_judge_is_asked_again_then_recorded_never_right():
    chat = ScriptedChat(["Hmm, hard to say.", "Well..."])
    judge = ChatJudge(JudgeConfig(backend="chat", retries=1), chat=chat)
    (verdict,) = judge.judge_many([(ITEM, "bowl")])
    assert verdict.correct is None and "unparseable" in verdict.reason and verdict.reply == "Well..."
    assert len(chat.calls) == 2 and chat.calls[1][-1]["content"].startswith("That reply is neither")
    chat = ScriptedChat(["Hmm.", "No."])
    (verdict,) = ChatJudge(JudgeConfig(backend="chat", retries=1), chat=chat).judge_many([(ITEM, "drawer")])
    assert verdict.correct is False


def test_a_judge_that_never_answers_gives_each_pair_its_reason():
    chat = ScriptedChat([ChatError("judge server unreachable")], retries=0)
    verdicts = ChatJudge(JudgeConfig(backend="chat"), chat=chat).judge_many([(ITEM, "bowl"), (ITEM, "drawer")])
    assert [v.correct for v in verdicts] == [None, None]
    assert all("did not answer" in v.reason and "unreachable" in v.reason for v in verdicts)


def test_one_failing_pair_does_not_sink_the_batch():
    def reply(messages):
        if "drawer" in messages[0]["content"]:
            raise ChatError("overloaded")
        return "yes"

    verdicts = ChatJudge(JudgeConfig(backend="chat"), chat=ScriptedChat(reply, retries=0)).judge_many(
        [(ITEM, "bowl"), (ITEM, "drawer")])
    assert verdicts[0].correct is True and verdicts[1].correct is None


@pytest.mark.parametrize("answer, right", [("The keys are in the blue bowl.", True), ("blue bowl", True),
                                           ("In the drawer.", False), ("", False), ("bowl", True),
                                           ("I do not know.", False)])
def test_offline_judge(answer, right):
    (verdict,) = OfflineJudge(f1=0.5).judge_many([(ITEM, answer)])
    assert verdict.correct is right and verdict.judge.startswith("offline")
    assert "not the paper's judge" in OfflineJudge.label


def test_an_answer_without_the_references_number_is_wrong_however_many_words_it_shares():
    ten = BenchItem("q2", "v", "How far will Sarah run?", "Ten kilometers.")
    verdicts = OfflineJudge(f1=0.5).judge_many([(ten, "Seven kilometers."), (ten, "She will run 10 kilometers."),
                                                (ten, "ten km, kilometers")])
    assert [v.correct for v in verdicts] == [False, True, True]
    assert "lacks the number 10" in verdicts[0].reason


def test_a_shared_pronoun_does_not_make_a_wrong_job_right():
    job = BenchItem("q3", "v", "What is Peter's job?", "He is a nurse.")
    verdicts = OfflineJudge(f1=0.5).judge_many([(job, "He is a surveyor."), (job, "She is a cashier."),
                                                (job, "Nurse at the city hospital."), (job, "A nurse.")])
    assert [v.correct for v in verdicts] == [False, False, True, True]


def test_an_answer_that_swaps_half_the_reference_for_other_words_is_wrong():
    firm = BenchItem("q4", "v", "Where does Ana work?", "At a lighting firm.")
    shelf = BenchItem("q5", "v", "Where is the box?", "On the third layer of the bookshelf.")
    verdicts = OfflineJudge(f1=0.5).judge_many([(firm, "At a construction firm."), (firm, "A lighting firm in Oslo."),
                                                (shelf, "On the second layer of the bookshelf."),
                                                (shelf, "3rd layer of the bookshelf."), (ITEM, "A green bowl."),
                                                (ITEM, "Blue bowl, on the table.")])
    assert [v.correct for v in verdicts] == [False, True, False, True, False, True]
    assert "'construction' where the ground truth says 'lighting'" in verdicts[0].reason
    assert "lacks the number 3rd" in verdicts[2].reason


def test_answers_that_give_most_of_the_reference_keep_their_token_f1_verdict():
    fixes = BenchItem("q6", "v", "What does Tom do?", "He fixes the computers and the printers.")
    drawer = BenchItem("q7", "v", "Where are the keys now?", "In the drawer by the door.")
    verdicts = OfflineJudge(f1=0.5).judge_many([(fixes, "He fixes the computers."), (drawer, "In the drawer."),
                                                (fixes, "He repairs laptops and printers.")])
    assert [v.correct for v in verdicts] == [True, True, False]
    assert words_swapped("He fixes the computers.", fixes.reference) == ([], [])
    assert words_swapped("Red umbrellas.", "A red umbrella.") == ([], [])
    assert words_swapped("Three bottles.", "3 times.") == (["times"], ["bottles"])


def test_a_list_of_candidates_holding_the_ground_truth_is_a_hedge():
    for answer, reference in [("Bonnie and Jessica.", "Bonnie."), ("Tea, coffee or juice.", "Coffee."),
                              ("3 or 4.", "3."), ("Orange juice and beer.", "Orange juice.")]:
        correct, reason = offline_match(answer, reference)
        assert not correct and "beside the ground truth" in reason
    for answer, reference in [("Salt and pepper.", "Salt and pepper."),  # the ground truth is the list
                              ("Pasta with mushrooms and garlic.", "Pasta."),  # a detail, not a candidate
                              ("In the garage, next to the car and the bike.", "In the garage."),
                              ("Yes, she does.", "Yes."),  # no "and" or "or": no list
                              ('At 01:00 Fiona says: "Take a break and revise."', "Fiona.")]:  # a quoted note
        assert offline_match(answer, reference)[0], (answer, reference)


def test_offline_normalization():
    assert contains("Anna and Tom bought seven books together", "7 books")
    assert answer_f1("Café", "cafe") == 1.0 and answer_f1("", "x") == 0.0
    assert not contains("the garage door", "In the kitchen.")


OPTIONS = ("A. One.", "B. Two.", "C. Three people.", "D. Four.")


@pytest.mark.parametrize("answer, letter", [("C", "C"), ("(C)", "C"), ("C. Three people.", "C"),
                                            ("The answer is C.", "C"), ("I think option b", "B"),
                                            ("There are three people.", "C"), ("Either A or B", None),
                                            ("no idea", None), ("<think>A? B?</think> D", "D")])
def test_extract_choice(answer, letter):
    assert extract_choice(answer, OPTIONS) == letter


def test_score_choice_counts_no_choice_as_wrong():
    item = BenchItem("m1", "v", "How many?", "C", options=OPTIONS)
    assert score_choice(item, "C").correct is True and score_choice(item, "B").correct is False
    none = score_choice(item, "I am not sure")
    assert none.correct is False and "no single option" in none.reason


@pytest.mark.models
def test_the_paper_judge_through_the_embedded_model():
    """The real judging path (factory, prompt, batch, parsing) on the bundled SmolLM2-135M: too small to be a
    good judge, so every verdict must be a parsed yes/no or a recorded "unparseable", never anything else."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (M3AGENT_SKIP_LLAMACPP=1)")
    from m3agent.config import ChatConfig
    from m3agent.factory import build_judge, judge_label

    config = JudgeConfig(backend="chat", retries=1, chat=ChatConfig(backend="llamacpp", context=2048, threads=2))
    judge = build_judge(config)
    assert judge.label == judge_label(config) and "yes/no" in judge.label
    pairs = [(ITEM, "The keys are in the blue bowl."), (ITEM, "I have no idea where anything is.")]
    for verdict in judge.judge_many(pairs):
        assert verdict.judge == judge.label
        if verdict.correct is None:
            assert verdict.reason.startswith("unparseable") and verdict.reply
        else:
            assert parse_yes_no(verdict.reply) is verdict.correct
