"""The simulated user: the action model's rates over many seeded draws, both feedback paths, bad replies."""

import math

import numpy as np
import pytest

from m3agent.eval.memorybench.simulator import (
    DEFAULT_ACTIONS,
    DISLIKE_RATE,
    DISLIKE_TEXT,
    LIKE_RATE,
    LIKE_TEXT,
    ActionModel,
    LLMUser,
    MetricUser,
    case_rng,
    parse_user_reply,
    sigmoid,
)
from m3agent.models.llm.scripted import ScriptedChat


def rates(model, scores, long_output, draws, seed=0):
    rng = np.random.default_rng(seed)
    counts = {"like": 0, "dislike": 0, "copy": 0}
    for i in range(draws):
        for action in model.act(scores[i % len(scores)], long_output, rng):
            counts[action] += 1
    return {k: v / draws for k, v in counts.items()}


def within(observed, expected, draws, sigmas=4):
    return abs(observed - expected) <= sigmas * math.sqrt(expected * (1 - expected) / draws)


def test_the_action_model_follows_its_formula():
    model = ActionModel(0.2, 0.1)
    assert model.p_like(7.5) == pytest.approx(0.1)  # c_L * sigmoid(0)
    assert model.p_dislike(4.5) == pytest.approx(0.05)
    assert model.p_like(10) == pytest.approx(0.2 * sigmoid(3.75))
    assert model.p_copy(9, long_output=True) == pytest.approx(4 * model.p_like(9))
    assert model.p_copy(9, long_output=False) == 0.0


def test_calibrated_rates_over_many_seeded_draws_are_the_global_rates():
    scores = list(range(1, 11))  # the reference distribution the default model is calibrated on
    draws = 200_000
    short = rates(DEFAULT_ACTIONS, scores, False, draws)
    assert within(short["like"], LIKE_RATE, draws) and within(short["dislike"], DISLIKE_RATE, draws)
    assert short["copy"] == 0
    long = rates(DEFAULT_ACTIONS, scores, True, draws, seed=1)
    assert within(long["copy"], 4 * LIKE_RATE, draws)
    assert within(long["like"], LIKE_RATE, draws)


def test_calibration_on_other_scores_and_per_score_rates():
    skewed = [8, 9, 9, 10, 3]
    model = ActionModel.calibrated(skewed)
    expected_like = sum(model.p_like(s) for s in skewed) / len(skewed)
    assert expected_like == pytest.approx(LIKE_RATE)
    draws = 100_000
    happy = rates(model, [9], False, draws)
    assert within(happy["like"], model.p_like(9), draws) and within(happy["dislike"], model.p_dislike(9), draws)


def test_draws_repeat_per_case_and_round():
    a = [DEFAULT_ACTIONS.act(9, True, case_rng(42, "NFCats:3", r)) for r in range(50)]
    b = [DEFAULT_ACTIONS.act(9, True, case_rng(42, "NFCats:3", r)) for r in range(50)]
    assert a == b


def test_metric_path_replies_with_the_fixed_texts():
    user = MetricUser(lambda answer: answer == "Pixel")
    good = user.react("Pixel", False, case_rng(42, "k", 1))
    bad = user.react("a dog", False, case_rng(42, "k", 1))
    assert (good.reply, good.terminated, good.path) == (LIKE_TEXT, True, "metric")
    assert (bad.reply, bad.terminated) == (DISLIKE_TEXT, False)
    assert good.satisfaction > bad.satisfaction


def test_llm_user_reads_json_and_marks_replies_that_are_not():
    reply = '```json\n{"reasoning": "short", "satisfaction_score": 3, "behavior": "continue_conversation", ' \
            '"response": "Please add the date."}\n```'
    user = LLMUser(ScriptedChat([reply]))
    reaction = user.react("When?", [{"role": "user", "content": "When?"}, {"role": "assistant", "content": "Soon"}],
                          domain="Open-Domain", task="SiSo", lang="en", long_output=False, rng=case_rng(1, "k", 1))
    assert (reaction.satisfaction, reaction.reply, reaction.terminated, reaction.problem) == (3, "Please add the date.", False, None)
    garbage = LLMUser(ScriptedChat(["I liked it a lot!"]), retries=1)
    reaction = garbage.react("q", [], domain="Legal", task="LiLo", lang="zh", long_output=True, rng=case_rng(1, "k", 1))
    assert reaction.problem and "not JSON" in reaction.problem and reaction.terminated and len(garbage.calls) == 2
    assert "中文" in garbage.chat.calls[0][0]["content"]


@pytest.mark.parametrize("text, problem", [
    ('{"satisfaction_score": "high"}', "no numeric"),
    ('{"satisfaction_score": 12}', "outside 1-10"),
    ('{"satisfaction_score": 5', "not JSON"),
    ("[1, 2]", "not JSON"),
])
def test_unusable_user_replies(text, problem):
    parsed, why = parse_user_reply(text)
    assert parsed is None and problem in why


def test_ending_the_dialog():
    parsed, _ = parse_user_reply('{"satisfaction_score": 9, "behavior": "end_conversation", "response": null}')
    assert parsed == (9.0, False, None)
