"""The control reward: judged answers, malformed replies and ids left in the answer, each shaping term alone."""

import pytest

from m3agent.config import ChatConfig, JudgeConfig, RewardConfig
from m3agent.control.records import Round
from m3agent.eval.judge import ChatJudge, OfflineJudge
from m3agent.eval.rewards import Episode, Rewarder, final_answer, has_ids
from m3agent.models.llm.scripted import ScriptedChat

SHAPED = RewardConfig(id_penalty=0.3, malformed_penalty=0.1, round_cost=0.05)


def rounds(*actions):
    """Model rounds, ``"bad"`` for a malformed one; a free seed search first."""
    out = [Round("search", "the question", by="seed")]
    for action in actions:
        out.append(Round("search" if action == "bad" else action, "x", malformed=action == "bad"))
    return out


def test_judged_answers_are_one_or_zero_and_shaping_is_off_by_default():
    rewarder = Rewarder(OfflineJudge())
    right, wrong = rewarder.score_many([
        Episode("Where are the keys?", "in the garage", "They are in the garage.", rounds=rounds("search", "answer")),
        Episode("Where are the keys?", "in the garage", "On the table.", rounds=rounds("bad", "bad", "answer"))])
    assert (right.total, right.correct) == (1.0, True) and (wrong.total, wrong.correct) == (0.0, False)
    assert right.verdict.judge == OfflineJudge.label and wrong.malformed == 2 and wrong.shaping == 0


def test_each_shaping_term():
    rewarder = Rewarder(OfflineJudge(), SHAPED)
    clean = rewarder.score(Episode("Who?", "Alice", "Alice", "Alice", rounds("answer")))
    assert clean.total == pytest.approx(1.0 - 0.05) and clean.rounds == 1  # the seed search costs nothing
    leaked = rewarder.score(Episode("Who?", "Alice", "Alice", "<character_3>", rounds("answer")))
    assert leaked.ids_left and leaked.correct and leaked.total == pytest.approx(1.0 - 0.3 - 0.05)
    malformed = rewarder.score(Episode("Who?", "Alice", "Bob", "Bob", rounds("bad", "bad", "answer")))
    assert malformed.total == pytest.approx(0.0 - 2 * 0.1 - 3 * 0.05)
    assert malformed.terms == {"ids": -0.0, "malformed": pytest.approx(-0.2), "rounds": pytest.approx(-0.15)}
    metrics = leaked.metrics()
    assert metrics["ids_left"] == 1.0 and metrics["correct"] == 1.0 and set(metrics) == set(clean.metrics())


def test_ids_of_every_kind_count():
    assert has_ids("<face_1> left") and has_ids("< Voice_2 > spoke") and has_ids("<character_10>")
    assert not has_ids("Alice left at <5 pm>") and not has_ids("")


def test_no_reference_no_judge_or_no_answer_never_counts_as_right():
    rewarder = Rewarder(OfflineJudge())
    assert rewarder.score(Episode("Who?", "", "Alice")).correct is None
    assert Rewarder(None).score(Episode("Who?", "Alice", "Alice")).verdict.reason == "no judge configured"
    empty = rewarder.score(Episode("Who?", "Alice", "   "))
    assert empty.correct is False and empty.total == 0.0


def test_chat_judge_verdicts_and_undecided_replies():
    def judge(messages):
        said = messages[-1]["content"].split("Agent's answer:")[1].split("\n")[0]
        return "Yes." if "garage" in said else "maybe"

    chat = ScriptedChat(judge)
    rewarder = Rewarder(ChatJudge(JudgeConfig(backend="chat", retries=0), chat=chat))
    right, undecided = rewarder.score_many([Episode("Where?", "garage", "in the garage"),
                                           Episode("Where?", "garage", "no idea")])
    assert right.total == 1.0 and right.verdict.judge.startswith("chat:")
    assert undecided.correct is None and undecided.total == 0.0  # neither yes nor no: never right


def test_factory_builds_the_rewarder_with_the_named_judge():
    from m3agent.factory import build_rewarder

    rewarder = build_rewarder(RewardConfig(judge=JudgeConfig(f1=0.9)))
    assert isinstance(rewarder.judge, OfflineJudge) and rewarder.judge.f1 == 0.9
    scripted = RewardConfig(judge=JudgeConfig(backend="chat", chat=ChatConfig(backend="scripted")))
    assert isinstance(build_rewarder(scripted).judge, ChatJudge)


def test_final_answer_from_a_decoded_rollout():
    transcript = ("Action: [Search]\nContent: keys\nuser\nSearch results for \"keys\":\nCLIP_1 (00:30-01:00):\n"
                  "- <character_1> puts the keys in the garage\n\nRound 2 of 5.\nassistant\n"
                  "<think>the garage</think>Action: [Answer]\nContent: <character_1> left them in the garage.\n\n")
    assert final_answer(transcript) == "<character_1> left them in the garage."
    assert final_answer("<think>hmm</think>\nThey are in the garage.") == "They are in the garage."
    assert final_answer("") == ""


def test_train_section_is_checked_on_load():
    from m3agent.config import load_config
    from m3agent.errors import M3AgentError

    config = load_config(None, {"M3AGENT__TRAIN__REWARD__ROUND_COST": "0.02"}, ["train.reward.id_penalty=0.1"])
    assert (config.train.reward.round_cost, config.train.reward.id_penalty) == (0.02, 0.1)
    assert config.train.reward.malformed_penalty == 0.0 and config.train.reward.judge.backend == "offline"
    for bad, message in ((["train.reward.id_penalty=-1"], ">= 0"), (["train.val_fraction=2"], "<= 1"),
                         (["train.reward.judge.backend=nope"], "train.reward.judge.backend"),
                         (["train.env=nope"], "train.env")):
        with pytest.raises(M3AgentError, match=message):
            load_config(None, {}, bad)
