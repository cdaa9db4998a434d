"""DAPO's dynamic sampling: flat groups (all rewards alike) are replaced by fresh groups, within a budget."""

import random

import pytest

from m3agent.train.dynamic_sampling import has_spread, resample_flat_groups
from m3agent.train.rollouts import Rollout


def group(*rewards: float, tag: str = "") -> list[Rollout]:
    return [Rollout([1], answer=tag, reward=r) for r in rewards]


def test_a_group_has_a_spread_only_when_its_rewards_differ():
    assert not has_spread(group(1.0, 1.0, 1.0)) and not has_spread(group(0.0, 0.0))
    assert has_spread(group(0.0, 1.0)) and has_spread(group(1.0, 0.9, 1.0))


def test_flat_groups_are_replaced_by_fresh_ones_until_they_have_a_spread():
    fresh = iter([group(0.0, 0.0, tag="flat again"), group(1.0, 0.0, tag="fresh")])
    played = []

    def play(task):
        played.append(task["question"])
        return next(fresh)

    drawn = group(1.0, 1.0, tag="all right") + group(0.0, 1.0, tag="mixed")
    pool = [{"question": "q1"}, {"question": "q2"}]
    step = resample_flat_groups(drawn, 2, 3, play, pool, random.Random(0))
    assert [e.answer for e in step.episodes] == ["fresh", "fresh", "mixed", "mixed"]  # the group keeps its place
    assert step.first == drawn and step.redrawn == 2 and len(played) == 2
    assert (step.spread_drawn, step.spread_kept) == (1, 2)


def test_the_budget_bounds_the_redraws_and_a_flat_group_left_is_kept():
    step = resample_flat_groups(group(1.0, 1.0) + group(0.0, 0.0), 2, 1, lambda task: group(0.0, 0.0, tag="new"),
                                [{"question": "q"}], random.Random(0))
    assert step.redrawn == 1 and [e.answer for e in step.episodes] == ["new", "new", "", ""]
    assert step.spread_kept == 0 and len(step.episodes) == 4
    off = resample_flat_groups(group(1.0, 1.0), 2, 0, lambda task: pytest.fail("drawn with no budget"),
                               [{"question": "q"}], random.Random(0))
    assert off.redrawn == 0 and off.episodes == off.first


def test_the_draws_are_seeded_so_a_resumed_run_redraws_the_same_questions():
    pool = [{"question": f"q{i}"} for i in range(50)]

    def questions(seed: str) -> list[str]:
        asked = []
        resample_flat_groups(group(1.0, 1.0), 2, 4, lambda task: asked.append(task["question"]) or group(0.0, 0.0),
                             pool, random.Random(seed))
        return asked

    assert questions("7:3") == questions("7:3") != questions("7:4") and len(questions("7:3")) == 4


def test_episodes_that_are_not_whole_groups_are_refused():
    with pytest.raises(ValueError, match="not groups of 2"):
        resample_flat_groups(group(1.0, 0.0, 1.0), 2, 1, lambda task: group(0.0, 1.0), [], random.Random(0))
    with pytest.raises(ValueError, match="fresh group has 1"):
        resample_flat_groups(group(1.0, 1.0), 2, 1, lambda task: group(0.0), [{"question": "q"}], random.Random(0))
